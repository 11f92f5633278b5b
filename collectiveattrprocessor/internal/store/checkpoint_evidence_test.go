package store

import (
	"encoding/json"
	"github.com/collectiveattr/collectiveattr/window"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// evidenceCheckpointConfig bounds a rank below what fillEvidence gives it
// in a minute, so that rings evict and wrap before a checkpoint.
func evidenceCheckpointConfig() Config {
	return Config{MaxJobs: 4, MaxRanksPerJob: 8, MaxEventsPerRank: 600, Window: 40 * time.Second, Mode: window.EvidenceMode}
}

// collectiveRecord is a stormlog marker of collective (comm, op, seq) on
// rank, lasting dur, with the communicator's size or member list.
func collectiveRecord(job string, rank, ts int64, comm, op string, seq, dur int64, members []int64, approximate bool) *ingest.Record {
	rec := stormlogRecord(job, rank, ts, ingest.StormlogMarker, "s")
	rec.Event.EventType = "nccl:" + op
	rec.Event.DeviceUsedBytes, rec.Event.AllocatorReservedBytes = telemetry.OptInt{}, telemetry.OptInt{}
	md := map[string]any{
		evidence.KeyCommID: comm, evidence.KeySeq: json.Number(itoa(seq)), evidence.KeyOp: op,
		evidence.KeyDurationNs: json.Number(itoa(dur)), evidence.KeyMessageBytes: json.Number("67108864"),
	}
	if members == nil {
		md[evidence.KeyCommNRanks] = json.Number("4")
	} else {
		list := make([]any, len(members))
		for i, m := range members {
			list[i] = json.Number(itoa(m))
		}
		md[evidence.KeyCommRanks] = list
	}
	if approximate {
		md[evidence.KeyTimeApproximate] = true
	}
	rec.Event.Metadata = md
	return rec
}

func accountingRecordOf(job string, rank, ts int64, comm string, total int64) *ingest.Record {
	rec := accountingRecord(rank, ts, comm, total)
	rec.JobID, rec.Event.SessionID = job, "s"
	return rec
}

// fillEvidence buffers seconds [from, to) of a 4-rank job in evidence
// mode: samples at 10 Hz, a world all_reduce every 5 s (a 1 GiB spike on
// every rank, NCCL's accounting covering it on ranks 0-2, approximate
// times on rank 3), and at 35 s the first all_gather of a two-rank
// communicator with its member list, where ranks 0 and 1 step up by
// 256 MiB for good (NCCL reports the new communicator's buffers from
// then on).
func fillEvidence(s *Store, job string, from, to int64) {
	step := int64(100 * time.Millisecond)
	for r := range int64(4) {
		run := &ingest.SampleRun{JobID: job, Rank: r, WorldSize: 4, Host: "node-a"}
		for n := from * 10; n < to*10; n++ {
			ts := n * step
			gap := int64(100<<20) + (n*7919%5)<<20
			if r < 2 && n >= 350 {
				gap += 256 << 20
			}
			if n%50 == 25 || n%50 == 26 {
				gap += 1 << 30
			}
			has := ingest.HasDeviceTotal
			if r == 3 {
				has |= ingest.HasProcessUsed // the others' memory is device-wide (their results say so)
			}
			run.Samples = append(run.Samples, ingest.SamplePoint{TimestampNs: ts, DeviceUsed: 8<<30 + gap, AllocatorReserved: 8 << 30, DeviceTotal: 80 << 30, Has: has})
			if n%50 == 25 {
				s.AddRecord(collectiveRecord(job, r, ts-step/2, "world", "all_reduce", n/50, 250_000_000, nil, r == 3), wall)
			}
			if n == 350 && r < 2 {
				s.AddRecord(collectiveRecord(job, r, ts-step/2, "tp", "all_gather", 0, 50_000_000, []int64{0, 1}, false), wall)
			}
			if n%5 == 0 && r < 3 {
				acct := int64(64 << 20)
				if n%50 == 25 || n%50 == 26 {
					acct += 1 << 30
				}
				s.AddRecord(accountingRecordOf(job, r, ts, "world", acct), wall)
				if r < 2 && n >= 350 {
					s.AddRecord(accountingRecordOf(job, r, ts, "tp", 256<<20), wall)
				}
			}
		}
		s.AddSampleRun(run, wall)
	}
}

// evidenceInput is job's evaluation input, in scratch of its own, without
// the ranks' baseline caches: they are not buffered state (a restored store
// starts them empty).
func evidenceInput(s *Store, job *Job) evidence.Input {
	var sc window.Scratch
	var es window.EvidenceScratch
	in := job.EvidenceSnapshot(&sc, &es).Input
	for i := range in.Ranks {
		in.Ranks[i].Baseline = nil
	}
	return in
}

func attributeEvidenceJob(t *testing.T, s *Store, job *Job) []attribution.Result {
	t.Helper()
	cfg, err := evidence.ResolveConfig("medium", nil, nil)
	require.NoError(t, err)
	var sc window.Scratch
	var es window.EvidenceScratch
	snap := job.EvidenceSnapshot(&sc, &es)
	return evidence.Attribute(&snap.Input, cfg, snap.Resolver)
}

// TestEvidenceCheckpointRoundTrip: an evidence-mode job restored from its
// checkpoint evaluates to exactly the results of the job it was taken
// from, checkpoints to the same bytes, and, given the same data after the
// restart (collectives it already knew and new ones), keeps evaluating
// exactly as the job that was never checkpointed.
func TestEvidenceCheckpointRoundTrip(t *testing.T) {
	orig := New(evidenceCheckpointConfig())
	fillEvidence(orig, "job-e", 0, 60)
	job := orig.Job("job-e")
	want := attributeEvidenceJob(t, orig, job)
	classes := map[string]int{}
	kinds := map[string]int{}
	for _, r := range want {
		classes[r.Classification]++
		kinds[r.Kind]++
		// Device-wide samples (section 10) decide a reason code.
		assert.Equal(t, r.Rank != 3, slices.Contains(r.ReasonCodes, evidence.ReasonDeviceWideMemory), "rank %d: %v", r.Rank, r.ReasonCodes)
	}
	// The comparison means something only if the state decides results:
	// NCCL's accounting (confirmed), member synchrony and the step at a
	// communicator's first use (persistent).
	require.Positive(t, classes[attribution.CollectiveConfirmed], "results %v", classes)
	require.Positive(t, kinds[attribution.KindPersistent], "results %v", kinds)
	_, _, ok := orig.Claim(job, &want[0], 0, true, nil)
	require.True(t, ok)
	data := orig.AppendCheckpoint(nil, job)

	restored := New(evidenceCheckpointConfig())
	got, err := restored.Restore(data, wall.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, evidenceInput(orig, job), evidenceInput(restored, got), "markers, accounting and collectives as buffered")
	assert.Equal(t, want, attributeEvidenceJob(t, restored, got))
	assert.Equal(t, data, restored.AppendCheckpoint(nil, got), "the restored job checkpoints to the same bytes")
	assert.Equal(t, job.Collectives(), got.Collectives())
	jo, _ := orig.InspectJob("job-e")
	jr, _ := restored.InspectJob("job-e")
	assert.Equal(t, jo, jr)
	for r := range int64(4) {
		vo, _ := orig.InspectRank("job-e", r)
		vr, _ := restored.InspectRank("job-e", r)
		vo.SampleCapacity, vr.SampleCapacity = 0, 0
		assert.Equal(t, vo, vr, "rank %d", r)
	}

	// After the restart: the world collective's next instances and the
	// two-rank communicator's known identity intern alike in both.
	fillEvidence(orig, "job-e", 60, 90)
	fillEvidence(restored, "job-e", 60, 90)
	orig.AddRecord(collectiveRecord("job-e", 0, 85*sec, "tp", "all_gather", 0, 50_000_000, []int64{0, 1}, false), wall)
	restored.AddRecord(collectiveRecord("job-e", 0, 85*sec, "tp", "all_gather", 0, 50_000_000, []int64{0, 1}, false), wall)
	assert.Equal(t, evidenceInput(orig, job), evidenceInput(restored, got))
	after := attributeEvidenceJob(t, orig, job)
	require.NotEmpty(t, after)
	assert.Equal(t, after, attributeEvidenceJob(t, restored, got))
	assert.Equal(t, job.Collectives(), got.Collectives())
	assert.Equal(t, orig.AppendCheckpoint(nil, job), restored.AppendCheckpoint(nil, got))
}

// TestCheckpointVersion1: a version 1 checkpoint (testdata, written
// before evidence mode's sections and the mode section existed) of a
// reference-mode job with marker times restores in the reference mode,
// and is re-written as version 2 with nothing lost: the same sections with
// the mode section added. Evidence mode refuses it (it would read no
// marker of the job), with an error that says why.
func TestCheckpointVersion1(t *testing.T) {
	old, err := os.ReadFile("testdata/checkpoint-v1-reference.bin")
	require.NoError(t, err)
	require.Equal(t, byte(1), old[len(checkpointMagic)])

	s := New(checkpointConfig())
	job, err := s.Restore(old, wall)
	require.NoError(t, err)
	assert.Nil(t, job.Collectives())
	markers := 0
	job.EachRank(func(_ int64, v RankView) {
		assert.Empty(t, v.EvidenceMarkers)
		markers += len(v.Markers)
	})
	require.Positive(t, markers, "the testdata holds marker times")
	v2 := s.AppendCheckpoint(nil, job)
	assert.Equal(t, byte(CheckpointVersion), v2[len(checkpointMagic)])
	asV1 := withoutSection(t, v2, tagMode)
	asV1[len(checkpointMagic)] = 1
	assert.Equal(t, old, asV1, "version 2 is version 1 and the mode")
	again, err := New(checkpointConfig()).Restore(v2, wall)
	require.NoError(t, err)
	assert.Equal(t, attributeJob(t, s, job), attributeJob(t, s, again))

	cfg := checkpointConfig()
	cfg.Mode = window.EvidenceMode
	_, err = New(cfg).Restore(old, wall)
	require.ErrorIs(t, err, ErrCheckpoint)
	assert.ErrorContains(t, err, "buffered in reference mode and this processor runs in evidence mode")

	// The refusal of a later version still holds for the old bytes.
	later := append([]byte(checkpointMagic+string(rune(CheckpointVersion+1))), old[len(checkpointMagic)+1:]...)
	_, err = New(checkpointConfig()).Restore(later, wall)
	assert.ErrorIs(t, err, ErrCheckpoint)
}

// TestCheckpointModes: a job checkpointed in one mode restores in that
// mode only; one without mode-specific buffers (samples alone) still
// carries its mode.
func TestCheckpointModes(t *testing.T) {
	ev := New(evidenceCheckpointConfig())
	fillEvidence(ev, "job-e", 0, 20)
	data := ev.AppendCheckpoint(nil, ev.Job("job-e"))
	_, err := New(checkpointConfig()).Restore(data, wall)
	require.ErrorIs(t, err, ErrCheckpoint)
	assert.ErrorContains(t, err, "buffered in evidence mode and this processor runs in reference mode")

	ref := New(checkpointConfig())
	ref.AddSampleRun(sampleRun("j", 0, 10*sec), wall)
	data = ref.AppendCheckpoint(nil, ref.Job("j"))
	_, err = New(evidenceCheckpointConfig()).Restore(data, wall)
	require.ErrorIs(t, err, ErrCheckpoint)
	_, err = New(checkpointConfig()).Restore(data, wall)
	require.NoError(t, err)
}

// TestEvidenceCheckpointRefusals: evidence state that the store could not
// have held is refused with ErrCheckpoint.
func TestEvidenceCheckpointRefusals(t *testing.T) {
	meta := func(w *ckptWriter) {
		w.section(tagRankMeta, func(w *ckptWriter) { w.varint(0); w.varint(4); w.str("h"); w.varint(5) })
	}
	// spanMarker is one marker with span code code, followed by span's
	// ids when code is markerNewSpan.
	spanMarker := func(coll int64, dur, code uint64, span byte) func(w *ckptWriter) {
		return func(w *ckptWriter) {
			meta(w)
			w.section(tagRankEvidenceMarkers, func(w *ckptWriter) {
				w.uvarint(1)
				w.varint(5)
				w.uvarint(dur)
				w.varint(coll)
				w.bool(false)
				w.uvarint(code)
				if code == markerNewSpan {
					w.b = append(w.b, make([]byte, 16)...)
					w.b = append(w.b, span, 0, 0, 0, 0, 0, 0, 0)
				}
			})
		}
	}
	markers := func(coll int64, dur uint64) func(w *ckptWriter) {
		return spanMarker(coll, dur, markerNoSpan, 0)
	}
	table := func(comms ...string) func(w *ckptWriter) {
		return func(w *ckptWriter) {
			list := make([]evidence.Collective, len(comms))
			for i, c := range comms {
				list[i] = evidence.Collective{CommID: c, Op: "all_reduce", Seq: 1}
			}
			w.uvarint(uint64(len(list)))
			for _, c := range list {
				w.str(c.CommID)
				w.str(c.Op)
				w.varint(c.Seq)
				w.varint(c.MessageBytes)
				w.varint(c.NRanks)
				w.uvarint(0) // no member list
			}
		}
	}
	accounting := func(comms []string, bytes int64) func(w *ckptWriter) {
		return func(w *ckptWriter) {
			meta(w)
			w.section(tagRankAccounting, func(w *ckptWriter) {
				w.uvarint(uint64(len(comms)))
				for _, c := range comms {
					w.str(c)
					w.uvarint(1)
					w.varint(5)
					w.varint(bytes)
				}
			})
		}
	}
	type section struct {
		tag  uint64
		body func(w *ckptWriter)
	}
	checkpoint := func(sections ...section) []byte {
		w := ckptWriter{b: []byte(checkpointMagic)}
		w.uvarint(CheckpointVersion)
		w.section(tagJob, func(w *ckptWriter) { w.str("j"); w.varint(5) })
		w.section(tagMode, func(w *ckptWriter) { w.str(attribution.ModeEvidence) })
		for _, s := range sections {
			w.section(s.tag, s.body)
		}
		return w.b
	}
	ok := checkpoint(section{tagCollectives, table("a", "b")}, section{tagRank, spanMarker(1, 10, markerNewSpan, 7)}, section{tagRank, func(w *ckptWriter) {
		w.section(tagRankMeta, func(w *ckptWriter) { w.varint(1); w.varint(4); w.str("h"); w.varint(5) })
	}})
	_, err := New(evidenceCheckpointConfig()).Restore(ok, wall)
	require.NoError(t, err, "the valid checkpoint the refused ones vary")

	tests := []struct {
		name string
		data []byte
	}{
		{"marker collective without a table", checkpoint(section{tagRank, markers(0, 10)})},
		{"marker collective outside the table", checkpoint(section{tagCollectives, table("a", "b")}, section{tagRank, markers(2, 10)})},
		{"marker collective below -1", checkpoint(section{tagCollectives, table("a")}, section{tagRank, markers(-2, 10)})},
		{"marker interval past the end of time", checkpoint(section{tagRank, markers(-1, 1<<63)})},
		{"one collective twice", checkpoint(section{tagCollectives, table("a", "a")})},
		{"table after a rank", checkpoint(section{tagRank, markers(-1, 10)}, section{tagCollectives, table("a")})},
		{"two tables", checkpoint(section{tagCollectives, table("a")}, section{tagCollectives, table("b")})},
		{"one accounting series twice", checkpoint(section{tagRank, accounting([]string{"c", "c"}, 1)})},
		{"negative accounting bytes", checkpoint(section{tagRank, accounting([]string{"c"}, -2)})},
		{"marker span the same as none before", checkpoint(section{tagRank, spanMarker(-1, 10, markerSameSpan, 0)})},
		{"marker span with zero ids", checkpoint(section{tagRank, spanMarker(-1, 10, markerNewSpan, 0)})},
		{"unknown marker span code", checkpoint(section{tagRank, spanMarker(-1, 10, 3, 0)})},
		{"file lines out of order", checkpoint(section{tagFileLines, fileLinesOf("b", 1, "a", 2)})},
		{"file line at position 0", checkpoint(section{tagFileLines, fileLinesOf("a", 0)})},
		{"file lines after a rank", checkpoint(section{tagRank, markers(-1, 10)}, section{tagFileLines, fileLinesOf("a", 1)})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(evidenceCheckpointConfig())
			_, err := s.Restore(tt.data, wall)
			require.ErrorIs(t, err, ErrCheckpoint)
			jobs, _, _ := s.Sizes()
			assert.Zero(t, jobs)
		})
	}
}

// fileLinesOf is a file lines section of (file, position) pairs.
func fileLinesOf(pairs ...any) func(w *ckptWriter) {
	return func(w *ckptWriter) {
		w.uvarint(uint64(len(pairs) / 2))
		for i := 0; i < len(pairs); i += 2 {
			w.str(pairs[i].(string))
			w.uvarint(uint64(pairs[i+1].(int)))
		}
	}
}

// TestEvidenceCheckpointKeepsMarkerSpans: evidence markers read from
// marker spans keep their spans through a checkpoint, after evictions have
// moved the spans table's front, so that a result after a restart links
// the same marker spans as before it.
func TestEvidenceCheckpointKeepsMarkerSpans(t *testing.T) {
	cfg := evidenceConfig()
	cfg.MaxEventsPerRank = 5
	orig := New(cfg)
	now := time.Unix(0, spanT0)
	for i := range int64(9) {
		require.True(t, orig.AddRecord(spanMarkerRecord(0, spanT0+i*1000, 100, i, byte(i+1)), now))
		require.True(t, orig.AddRecord(spanMarkerRecord(1, spanT0+i*1000+10, 100, i, byte(i+0x41)), now))
	}
	require.True(t, orig.AddRecord(evidenceMarkerRecord(1, spanT0+9*1000, "c", 9, 100), now))
	job := orig.Job("j")
	data := orig.AppendCheckpoint(nil, job)

	restored := New(cfg)
	got, err := restored.Restore(data, now)
	require.NoError(t, err)
	for r := range int64(2) {
		vo, _ := orig.InspectRank("j", r)
		vr, _ := restored.InspectRank("j", r)
		require.NotEmpty(t, vo.EvidenceMarkers)
		assert.Equal(t, vo.EvidenceMarkers, vr.EvidenceMarkers, "rank %d", r)
	}
	r := &attribution.Result{
		Rank: 1, Mode: attribution.ModeEvidence, MarkerTimesNs: []int64{spanT0 + 7010},
		Collective: &attribution.CollectiveMatch{CommID: "c", Op: "all_reduce", Seq: 7, Members: []attribution.MemberMarker{
			{Rank: 0, StartNs: spanT0 + 7000, EndNs: spanT0 + 7100}, {Rank: 1, StartNs: spanT0 + 7010, EndNs: spanT0 + 7110},
		}},
	}
	want := job.AppendLinks(nil, r)
	require.Len(t, want, 1)
	assert.Equal(t, want, got.AppendLinks(nil, r))
	members := orig.MemberSpans(job, r.Collective)
	require.Equal(t, []ingest.SpanRef{{TraceID: [16]byte{8}, SpanID: [8]byte{8}}, want[0]}, members)
	assert.Equal(t, members, restored.MemberSpans(got, r.Collective))
	assert.Equal(t, data, restored.AppendCheckpoint(nil, got), "the restored job checkpoints to the same bytes")

	// After the restart new spans take the next places in the table.
	require.True(t, orig.AddRecord(spanMarkerRecord(0, spanT0+10*1000, 100, 10, 0x20), now))
	require.True(t, restored.AddRecord(spanMarkerRecord(0, spanT0+10*1000, 100, 10, 0x20), now))
	vo, _ := orig.InspectRank("j", 0)
	vr, _ := restored.InspectRank("j", 0)
	assert.Equal(t, vo.EvidenceMarkers, vr.EvidenceMarkers)
}
