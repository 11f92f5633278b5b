package store

import (
	"testing"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
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
