package store

import (
	"encoding/json"
	"github.com/collectiveattr/collectiveattr/window"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

func evidenceConfig() Config {
	cfg := testConfig()
	cfg.Mode = window.EvidenceMode
	cfg.Phases = false
	return cfg
}

// evidenceMarkerRecord is a stormlog marker of collective (comm, seq) on
// rank, lasting dur, its metadata as the decoder gives it.
func evidenceMarkerRecord(rank, ts int64, comm string, seq, dur int64) *ingest.Record {
	rec := stormlogRecord("j", rank, ts, 0, "s")
	rec.Event.EventType = "nccl_op"
	rec.Event.DeviceUsedBytes, rec.Event.AllocatorReservedBytes = telemetry.OptInt{}, telemetry.OptInt{}
	rec.Event.Metadata = map[string]any{
		evidence.KeyCommID: comm, evidence.KeySeq: json.Number(itoa(seq)), evidence.KeyOp: "all_reduce",
		evidence.KeyDurationNs: json.Number(itoa(dur)), evidence.KeyCommRanks: []any{json.Number("1"), json.Number("0")},
	}
	return rec
}

func accountingRecord(rank, ts int64, comm string, total int64) *ingest.Record {
	rec := stormlogRecord("j", rank, ts, 0, "s")
	rec.Event.EventType = evidence.AccountingEventType
	rec.Event.DeviceUsedBytes, rec.Event.AllocatorReservedBytes = telemetry.OptInt{}, telemetry.OptInt{}
	rec.Event.Metadata = map[string]any{evidence.KeyCommID: comm, evidence.KeyMemoryTotal: json.Number(itoa(total))}
	return rec
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

func evidenceSnapshot(t *testing.T, s *Store) evidence.Input {
	t.Helper()
	job := s.Job("j")
	require.NotNil(t, job)
	var sc window.Scratch
	var es window.EvidenceScratch
	return job.EvidenceSnapshot(&sc, &es).Input
}

// TestEvidenceBuffers: markers keep their interval and identity (one table
// entry per (comm, seq) across ranks), accounting is kept per
// communicator, samples are shared with the reference columns, and the
// entries are counted and bounded like any other.
func TestEvidenceBuffers(t *testing.T) {
	s := New(evidenceConfig())
	for r := range int64(2) {
		for i := range int64(5) {
			require.True(t, s.AddRecord(stormlogRecord("j", r, (10+i)*sec, ingest.StormlogSample, "s"), wall))
		}
		require.True(t, s.AddRecord(evidenceMarkerRecord(r, 12*sec+r, "c1", 7, 300), wall))
		require.True(t, s.AddRecord(accountingRecord(r, 11*sec, "c1", 100), wall))
		require.True(t, s.AddRecord(accountingRecord(r, 13*sec, "c1", 300), wall))
	}
	_, _, events := s.Sizes()
	assert.Equal(t, 2*(5+1+2), events)

	in := evidenceSnapshot(t, s)
	require.Len(t, in.Ranks, 2)
	require.Len(t, in.Collectives, 1)
	assert.Equal(t, evidence.Collective{CommID: "c1", Seq: 7, Op: "all_reduce", Ranks: []int64{0, 1}}, in.Collectives[0])
	for r, rd := range in.Ranks {
		assert.Equal(t, []evidence.Marker{{StartNs: 12*sec + int64(r), EndNs: 12*sec + int64(r) + 300, Collective: 0}}, rd.Markers)
		assert.Equal(t, []evidence.AccountingSeries{{CommID: "c1", TimesNs: []int64{11 * sec, 13 * sec}, Bytes: []int64{100, 300}}}, rd.Accounting)
		assert.Len(t, rd.Samples.TimesNs, 5)
		assert.Len(t, rd.Samples.TotalBytes, 5)
	}
	assert.Equal(t, int64(10*sec), in.TraceStartNs)
}

// TestEvidenceBounds: the window trims markers and accounting, and a full
// rank evicts its oldest entry whichever ring holds it.
func TestEvidenceBounds(t *testing.T) {
	cfg := evidenceConfig()
	cfg.MaxEventsPerRank = 3
	s := New(cfg)
	require.True(t, s.AddRecord(accountingRecord(0, 1*sec, "c1", 100), wall))
	require.True(t, s.AddRecord(evidenceMarkerRecord(0, 2*sec, "c1", 1, 10), wall))
	require.True(t, s.AddRecord(stormlogRecord("j", 0, 3*sec, ingest.StormlogSample, "s"), wall))
	require.True(t, s.AddRecord(stormlogRecord("j", 0, 4*sec, ingest.StormlogSample, "s"), wall))
	tally := s.Take()
	assert.Equal(t, int64(1), tally.Evicted[BoundMaxEventsPerRank], "the accounting point was the oldest")
	in := evidenceSnapshot(t, s)
	require.Len(t, in.Ranks, 1)
	assert.Empty(t, in.Ranks[0].Accounting)
	assert.Len(t, in.Ranks[0].Markers, 1)

	// A minute later the window holds only the new sample.
	require.True(t, s.AddRecord(stormlogRecord("j", 0, 70*sec, ingest.StormlogSample, "s"), wall))
	s.Sweep(wall, 1e18, false, false)
	in = evidenceSnapshot(t, s)
	require.Len(t, in.Ranks, 1)
	assert.Empty(t, in.Ranks[0].Markers)
	assert.Empty(t, in.Collectives)
	_, _, events := s.Sizes()
	assert.Equal(t, 1, events)
}

// TestCollectivesTableCompacted: a long job's table keeps only the
// identities its buffered markers refer to.
func TestCollectivesTableCompacted(t *testing.T) {
	cfg := evidenceConfig()
	cfg.MaxEventsPerRank = 10
	s := New(cfg)
	for seq := range int64(500) {
		require.True(t, s.AddRecord(evidenceMarkerRecord(0, (seq+1)*sec/10, "c1", seq, 10), wall))
	}
	in := evidenceSnapshot(t, s)
	require.Len(t, in.Ranks[0].Markers, 10)
	require.Len(t, in.Collectives, 10)
	for i, m := range in.Ranks[0].Markers {
		assert.Equal(t, int64(490+i), in.Collectives[m.Collective].Seq)
	}
	job := s.Job("j")
	assert.LessOrEqual(t, len(job.Collectives()), 10)
	// The compacted table still interns: the same identity on another rank
	// finds its entry.
	require.True(t, s.AddRecord(evidenceMarkerRecord(1, 50*sec, "c1", 499, 10), wall))
	in = evidenceSnapshot(t, s)
	assert.Len(t, in.Collectives, 10)
}

// TestReferenceModeKeepsNoEvidence: the reference mode reads identity
// records as it always did, and buffers nothing for evidence mode.
func TestReferenceModeKeepsNoEvidence(t *testing.T) {
	s := New(testConfig())
	require.True(t, s.AddRecord(evidenceMarkerRecord(0, 2*sec, "c1", 1, 10), wall))
	require.True(t, s.AddRecord(accountingRecord(0, 1*sec, "c1", 100), wall))
	job := s.Job("j")
	assert.Nil(t, job.Collectives())
	v, _ := s.InspectRank("j", 0)
	assert.Empty(t, v.EvidenceMarkers)
	assert.Equal(t, 2, v.Others)
	assert.Equal(t, 2, v.Len, "no accounting point either")
}
