package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/collectiveattr/collectiveattr/window"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/phase"
)

// checkpointConfig is small enough that the rings of fillRich wrap and
// evict, so that a checkpoint is taken of rings whose storage does not
// start at their front.
func checkpointConfig() Config {
	return Config{MaxJobs: 4, MaxRanksPerJob: 8, MaxEventsPerRank: 400, Window: 30 * time.Second, Phases: true}
}

// fillRich buffers a job with every kind of entry on 3 ranks: metrics
// sample runs with a spike and a marker span every 5 s, a device total
// that changes, stormlog samples, markers and other records under two
// sessions, phase boundaries with metadata, and phase spans, one of them
// waiting for its parent.
func fillRich(s *Store, job string) {
	step := int64(100 * time.Millisecond)
	for r := range int64(3) {
		run := &ingest.SampleRun{JobID: job, Rank: r, WorldSize: 4, Host: "node-a", Samples: make([]ingest.SamplePoint, 10)}
		for sec := range int64(60) {
			for i := range run.Samples {
				n := sec*10 + int64(i)
				ts := n * step
				gap := int64(1<<20) + (n%7)<<16
				if n%50 == 25 {
					gap = 3 << 30
					s.AddRecord(&ingest.Record{Kind: ingest.KindMarker, JobID: job, Rank: r, TimestampNs: ts - step,
						Marker:        ingest.SpanRef{TraceID: [16]byte{1, byte(r)}, SpanID: [8]byte{byte(n), byte(n >> 8)}},
						MarkerTimesNs: []int64{ts - step, ts + step}}, wall)
				}
				total := int64(80 << 30)
				if sec >= 40 {
					total = 40 << 30
				}
				run.Samples[i] = ingest.SamplePoint{TimestampNs: ts, DeviceUsed: 8<<30 + gap, AllocatorReserved: 8 << 30, DeviceTotal: total, Has: ingest.HasDeviceTotal}
			}
			s.AddSampleRun(run, wall)
			ts := sec * int64(time.Second)
			session := "s1"
			if sec >= 45 {
				session = "s2"
			}
			switch sec % 4 {
			case 0:
				s.AddRecord(stormlogRecord(job, r, ts+3*step, ingest.StormlogSample, session), wall)
			case 1:
				m := stormlogRecord(job, r, ts+3*step, ingest.StormlogMarker, session)
				m.Line = ingest.FileLine{File: fmt.Sprintf("rank-%d.jsonl", r), Position: sec + 1}
				s.AddRecord(m, wall)
			case 2:
				s.AddRecord(stormlogRecord(job, r, ts+3*step, 0, session), wall)
			case 3:
				b := stormlogRecord(job, r, ts+3*step, ingest.StormlogBoundary, session)
				b.Event.EventType = phase.EnterEvent
				b.Event.Metadata = map[string]any{"phase_scope": map[string]any{
					"action": "enter", "name": "fwd", "scope_id": "x", "thread_name": "main",
					"path": []any{"step", "fwd"}, "sequence": json.Number("3"), "thread_id": json.Number("1"),
				}, "ok": true, "none": nil}
				s.AddRecord(b, wall)
				s.AddRecord(&ingest.Record{Kind: ingest.KindPhaseSpan, JobID: job, Rank: r,
					PhaseSpan:    phase.Span{ThreadName: "main", ScopeID: "00000000000000a" + string(rune('0'+sec%10)), Path: []string{"step", "bwd"}, ThreadID: 1, StartNs: ts, EndNs: ts + 4*step},
					PhaseTraceID: [16]byte{9}, PhaseParentID: [8]byte{byte(sec % 3)}}, wall)
			}
		}
	}
}

func attributeJob(t *testing.T, s *Store, job *Job) []attribution.Result {
	t.Helper()
	cfg, err := attribution.ResolveConfig("medium", nil)
	require.NoError(t, err)
	var sc window.Scratch
	snap := job.Snapshot(&sc)
	return attribution.AttributeColumns(snap.Input, cfg, snap.Resolver)
}

// TestCheckpointRoundTrip: a job restored from its checkpoint evaluates to
// exactly the results of the job it was taken from, remembers what that
// job emitted, and checkpoints to the same bytes.
func TestCheckpointRoundTrip(t *testing.T) {
	orig := New(checkpointConfig())
	fillRich(orig, "job-a")
	job := orig.Job("job-a")
	want := attributeJob(t, orig, job)
	require.NotEmpty(t, want, "the job must give results for the comparison to mean anything")

	// Emit the first result and an evidence-mode persistent step, so that
	// the emitted memory, with both kinds of entry, is part of the state.
	_, _, ok := orig.Claim(job, &want[0], 0, true, nil)
	require.True(t, ok)
	step := attribution.Result{Rank: 2, Kind: attribution.KindPersistent, IntervalStartNs: 7 * sec, IntervalEndNs: 9 * uint64(sec)}
	_, _, ok = orig.Claim(job, &step, 0, true, nil)
	require.True(t, ok)
	require.Len(t, orig.Emitted("job-a").Ranks, 2)
	assert.Equal(t, []*Job{job}, orig.Unsaved())
	data := orig.AppendCheckpoint(nil, job)
	assert.Empty(t, orig.Unsaved(), "a checkpointed job is saved")

	restored := New(checkpointConfig())
	now := wall.Add(time.Hour)
	got, err := restored.Restore(data, now)
	require.NoError(t, err)
	assert.Empty(t, restored.Unsaved())
	assert.Equal(t, attributeJob(t, orig, job), attributeJob(t, restored, got))
	assert.Equal(t, data, restored.AppendCheckpoint(nil, got), "the restored job checkpoints to the same bytes")

	jo, _ := orig.InspectJob("job-a")
	jr, _ := restored.InspectJob("job-a")
	assert.Equal(t, jo, jr)
	for r := range int64(3) {
		vo, _ := orig.InspectRank("job-a", r)
		vr, _ := restored.InspectRank("job-a", r)
		vo.SampleCapacity, vr.SampleCapacity = 0, 0
		assert.Equal(t, vo, vr, "rank %d", r)
	}
	assert.Equal(t, [3]int{1, 3, jo.Events}, func() [3]int { j, r, e := restored.Sizes(); return [3]int{j, r, e} }())
	assert.Equal(t, now, got.lastSeen, "the idle timeout starts anew at the restore")
	eo, er := orig.Emitted("job-a"), restored.Emitted("job-a")
	require.NotNil(t, er, "the emitted memory is restored")
	assert.Equal(t, eo.Ranks, er.Ranks)
	assert.True(t, eo.LastSeen.Equal(er.LastSeen), "LastSeen %v restored as %v", eo.LastSeen, er.LastSeen)
	// The restored step is remembered as a persistent step only.
	_, _, ok = restored.Claim(got, &attribution.Result{Rank: 2, Kind: attribution.KindPersistent, IntervalStartNs: 8 * sec, IntervalEndNs: 10 * uint64(sec)}, 0, true, nil)
	assert.False(t, ok, "the persistent step is remembered")

	// The watermark is rebuilt: one rank running ahead moves neither job's
	// event time (the second-newest rank's).
	orig.AddSampleRun(sampleRun("job-a", 0, 200*sec), wall)
	restored.AddSampleRun(sampleRun("job-a", 0, 200*sec), now)
	jo2, _ := orig.InspectJob("job-a")
	jr2, _ := restored.InspectJob("job-a")
	assert.Equal(t, jo.NewestNs, jo2.NewestNs)
	assert.Equal(t, jo2.NewestNs, jr2.NewestNs)

	// Both remember the emitted interval alike.
	for i := range want {
		_, _, okOrig := orig.Claim(job, &want[i], 0, true, nil)
		_, _, okRest := restored.Claim(got, &want[i], 0, true, nil)
		assert.Equal(t, okOrig, okRest, "result %d", i)
	}
	assert.Equal(t, []*Job{got}, restored.Unsaved(), "a claim changes the job")
}

// TestCheckpointRefusals: a checkpoint that cannot be restored is refused
// with an error and leaves the store as it was.
func TestCheckpointRefusals(t *testing.T) {
	src := New(checkpointConfig())
	fillRich(src, "job-a")
	data := src.AppendCheckpoint(nil, src.Job("job-a"))
	tests := []struct {
		name  string
		cfg   func(*Config)
		data  []byte
		setup func(*Store)
		limit error
	}{
		{name: "empty", data: nil},
		{name: "other bytes", data: []byte("{\"job\":1}")},
		{name: "a later version", data: append([]byte(checkpointMagic+string(rune(CheckpointVersion+1))), data[len(checkpointMagic)+1:]...)},
		{name: "another mode", data: data, cfg: func(c *Config) { c.Mode = window.EvidenceMode }},
		{name: "no mode section", data: withoutSection(t, data, tagMode)},
		{name: "truncated", data: data[:len(data)/2]},
		{name: "trailing byte", data: append(append([]byte{}, data...), 0)},
		{name: "already tracked", data: data, setup: func(s *Store) { s.AddSampleRun(sampleRun("job-a", 0, 1), wall) }},
		{name: "max_jobs", data: data, cfg: func(c *Config) { c.MaxJobs = 1 }, setup: func(s *Store) { s.AddSampleRun(sampleRun("b", 0, 1), wall) }, limit: ErrJobLimit},
		{name: "max_ranks_per_job", data: data, cfg: func(c *Config) { c.MaxRanksPerJob = 2 }, limit: ErrRankLimit},
		{name: "max_events_per_rank", data: data, cfg: func(c *Config) { c.MaxEventsPerRank = 100 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := checkpointConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			s := New(cfg)
			if tt.setup != nil {
				tt.setup(s)
			}
			jobs, ranks, events := s.Sizes()
			_, err := s.Restore(tt.data, wall)
			require.ErrorIs(t, err, ErrCheckpoint)
			if tt.limit != nil {
				assert.ErrorIs(t, err, tt.limit)
			}
			j2, r2, e2 := s.Sizes()
			assert.Equal(t, []int{jobs, ranks, events}, []int{j2, r2, e2})
		})
	}
}

// TestCheckpointOfAnEmptyRank: a rank with no entries left (all trimmed)
// but an emitted interval is restored with it.
func TestCheckpointOfAnEmptyRank(t *testing.T) {
	s := New(checkpointConfig())
	s.AddSampleRun(sampleRun("j", 0, 1*sec), wall)
	// Two ranks far ahead make the job's event time (the second-newest
	// rank's) leave rank 0's entries behind the window.
	s.AddSampleRun(sampleRun("j", 1, 100*sec), wall)
	s.AddSampleRun(sampleRun("j", 2, 100*sec), wall)
	s.Sweep(wall, time.Hour, false, false)
	job := s.Job("j")
	_, _, ok := s.Claim(job, &attribution.Result{Rank: 0, IntervalStartNs: 1, IntervalEndNs: 5}, 0, true, nil)
	require.True(t, ok)
	r := New(checkpointConfig())
	got, err := r.Restore(s.AppendCheckpoint(nil, job), wall)
	require.NoError(t, err)
	v, ok := r.InspectRank("j", 0)
	require.True(t, ok)
	assert.Zero(t, v.Len)
	_, _, ok = r.Claim(got, &attribution.Result{Rank: 0, IntervalStartNs: 3, IntervalEndNs: 9}, 0, true, nil)
	assert.False(t, ok, "the emitted interval is remembered")
}

// FuzzRestore: any bytes restore or are refused with ErrCheckpoint, never
// panic; what restores snapshots (in either mode) and checkpoints again.
func FuzzRestore(f *testing.F) {
	src := New(checkpointConfig())
	fillRich(src, "job-a")
	f.Add(src.AppendCheckpoint(nil, src.Job("job-a")))
	small := New(checkpointConfig())
	small.AddSampleRun(sampleRun("j", 0, 1*sec, 2*sec), wall)
	small.AddRecord(markerRecord("j", 0, 7, 1*sec, 2*sec), wall)
	f.Add(small.AppendCheckpoint(nil, small.Job("j")))
	ev := New(evidenceCheckpointConfig())
	fillEvidence(ev, "job-e", 50, 60)
	f.Add(ev.AppendCheckpoint(nil, ev.Job("job-e")))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := New(checkpointConfig())
		job, err := s.Restore(data, wall)
		if err != nil {
			if !errors.Is(err, ErrCheckpoint) {
				t.Fatalf("error %v does not wrap ErrCheckpoint", err)
			}
			return
		}
		var sc window.Scratch
		job.Snapshot(&sc)
		var es window.EvidenceScratch
		job.EvidenceSnapshot(&sc, &es)
		s.AppendCheckpoint(nil, job)
		s.Sweep(wall, 0, true, false)
	})
}

// withoutSection is checkpoint data without its job-level section of tag.
func withoutSection(t *testing.T, data []byte, tag uint64) []byte {
	t.Helper()
	out := []byte(checkpointMagic)
	r := &ckptReader{b: data[len(checkpointMagic):]}
	w := ckptWriter{b: out}
	w.uvarint(r.uvarint())
	found := false
	for {
		tg, body, ok := r.section()
		if !ok {
			break
		}
		if tg == tag {
			found = true
			continue
		}
		w.section(tg, func(w *ckptWriter) { w.b = append(w.b, body.b...) })
	}
	require.NoError(t, r.err)
	require.True(t, found, "section %d", tag)
	return w.b
}
