package store

import (
	"github.com/collectiveattr/collectiveattr/window"
	"testing"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIdenticalItemsAreBufferedOnce: a retried or replayed item identical
// to one its rank buffers is refused as ErrDuplicate; items that differ in
// time or content are not.
func TestIdenticalItemsAreBufferedOnce(t *testing.T) {
	s := New(testConfig())
	require.Zero(t, s.AddSampleRun(sampleRun("j", 0, 10*sec, 11*sec, 12*sec), wall))
	require.True(t, s.AddRecord(markerRecord("j", 0, 7, 10*sec, 11*sec), wall))
	require.True(t, s.AddRecord(stormlogRecord("j", 1, 10*sec, ingest.StormlogSample, "s"), wall))
	s.Take()

	// The whole run again, then one overlapping it and going on.
	assert.Equal(t, 3, s.AddSampleRun(sampleRun("j", 0, 10*sec, 11*sec, 12*sec), wall))
	assert.Equal(t, 2, s.AddSampleRun(sampleRun("j", 0, 11*sec, 12*sec, 13*sec), wall))
	assert.False(t, s.AddRecord(markerRecord("j", 0, 7, 10*sec, 11*sec), wall), "the same span")
	assert.False(t, s.AddRecord(stormlogRecord("j", 1, 10*sec, ingest.StormlogSample, "s"), wall), "the same record")
	tally := s.Take()
	assert.Equal(t, int64(3+2+1+1), tally.Rejected(ErrDuplicate))
	assert.Equal(t, int64(1), tally.Buffered, "13 s is new")

	// Not identical: another span at the same time, another gap, another
	// session, another rank.
	assert.True(t, s.AddRecord(markerRecord("j", 0, 8, 10*sec, 11*sec), wall))
	other := sampleRun("j", 0, 10*sec)
	other.Samples[0].DeviceUsed++
	assert.Zero(t, s.AddSampleRun(other, wall))
	assert.True(t, s.AddRecord(stormlogRecord("j", 1, 10*sec, ingest.StormlogSample, "s2"), wall))
	assert.Zero(t, s.AddSampleRun(sampleRun("j", 2, 10*sec), wall))
	tally = s.Take()
	assert.Zero(t, tally.Rejected(ErrDuplicate))

	rb, ok := s.InspectRank("j", 0)
	require.True(t, ok)
	assert.Equal(t, []int64{10 * sec, 11 * sec, 12 * sec, 13 * sec, 10 * sec}, rb.SampleTimesNs)
}

// TestFileLinesTellRecordsApart: records read from a file by position are
// one record per position. A second line with the same text, past the
// furthest position accepted, is buffered; the same position again (a
// resent batch), or a file read again from its start, is judged by
// content and refused; a record without a position, or of a file no
// record was accepted from, is judged by content.
func TestFileLinesTellRecordsApart(t *testing.T) {
	for _, mode := range []window.Mode{window.ReferenceMode, window.EvidenceMode} {
		cfg := testConfig()
		cfg.Mode = mode
		s := New(cfg)
		at := func(file string, pos int64, class ingest.StormlogClass) *ingest.Record {
			r := stormlogRecord("j", 0, 10*sec, class, "s")
			if class&ingest.StormlogMarker != 0 {
				r.Event.EventType = "nccl:all_reduce"
				r.Event.DeviceUsedBytes, r.Event.AllocatorReservedBytes = telemetry.OptInt{}, telemetry.OptInt{}
			}
			r.Line = ingest.FileLine{File: file, Position: pos}
			return r
		}
		for _, class := range []ingest.StormlogClass{ingest.StormlogSample, ingest.StormlogMarker} {
			s.Forget("j")
			s.Take()
			assert.True(t, s.AddRecord(at("a.jsonl", 1, class), wall))
			assert.True(t, s.AddRecord(at("a.jsonl", 2, class), wall), "%s mode, class %v: the file's second line", mode.Name(), class)
			assert.False(t, s.AddRecord(at("a.jsonl", 2, class), wall), "the second line resent")
			assert.False(t, s.AddRecord(at("a.jsonl", 1, class), wall), "the file read again from its start")
			assert.False(t, s.AddRecord(at("", 0, class), wall), "no position: by content")
			assert.False(t, s.AddRecord(at("b.jsonl", 7, class), wall), "another file's first line is judged by content")
			assert.False(t, s.AddRecord(at("b.jsonl", 8, class), wall), "a refused line does not say where b's reading stands")
			tally := s.Take()
			assert.Equal(t, int64(5), tally.Rejected(ErrDuplicate))
			assert.Equal(t, int64(2), tally.Buffered)
		}
	}
}

// TestFileLinesSurviveARestart: a job restored from its checkpoint knows
// how far it read each file, so a file read again from its start after
// the restart counts nothing twice, and a line the file holds twice past
// that point is still a second record.
func TestFileLinesSurviveARestart(t *testing.T) {
	line := func(pos int64) *ingest.Record {
		r := stormlogRecord("j", 0, 10*sec, ingest.StormlogSample, "s")
		r.Line = ingest.FileLine{File: "a.jsonl", Position: pos}
		return r
	}
	s := New(testConfig())
	require.True(t, s.AddRecord(line(1), wall))
	restored := New(testConfig())
	_, err := restored.Restore(s.AppendCheckpoint(nil, s.Job("j")), wall)
	require.NoError(t, err)
	assert.False(t, restored.AddRecord(line(1), wall), "read again from the start")
	assert.True(t, restored.AddRecord(line(2), wall), "the file's second line with the same text")
}

// TestAddingRecordsDoesNotAllocate: once a rank's buffers have grown, a
// stormlog record, and in evidence mode a run of marker spans, is
// buffered without an allocation: the mode's methods are handed records
// that live in the store or the converter, not copies of their own.
func TestAddingRecordsDoesNotAllocate(t *testing.T) {
	for _, mode := range []window.Mode{window.ReferenceMode, window.EvidenceMode} {
		cfg := testConfig()
		cfg.Mode = mode
		s := New(cfg)
		rec := stormlogRecord("j", 0, 0, ingest.StormlogSample, "s")
		rec.Line = ingest.FileLine{File: "a.jsonl"}
		run := &ingest.MarkerRun{JobID: "j", Rank: 0, Spans: []ingest.MarkerSpan{{Ref: ingest.SpanRef{SpanID: [8]byte{1}}, TimesNs: []int64{0}}}}
		ts := int64(0)
		add := func() {
			ts += sec
			rec.TimestampNs, rec.Event.TimestampNs = ts, ts
			rec.Line.Position++
			s.AddRecord(rec, wall)
			run.Spans[0].TimesNs[0] = ts
			run.Spans[0].Ref.SpanID[1]++
			s.AddMarkerRun(run, wall)
		}
		for range 500 {
			add()
		}
		if allocs := testing.AllocsPerRun(200, add); allocs != 0 {
			t.Errorf("%s mode: %v allocations per record and marker run", mode.Name(), allocs)
		}
	}
}
