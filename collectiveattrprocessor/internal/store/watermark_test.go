package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneRankCannotMoveTheJobAhead (issue 16 item 1): a point of one rank
// far ahead of the others does not make the job's later data stale, nor
// its new ranks; the job's event time follows the second-newest rank.
func TestOneRankCannotMoveTheJobAhead(t *testing.T) {
	s := New(testConfig()) // window 1 min
	for r := range int64(3) {
		require.Zero(t, s.AddSampleRun(sampleRun("j", r, 100*sec), wall))
	}
	require.Zero(t, s.AddSampleRun(sampleRun("j", 2, 100*sec+10*60*sec), wall), "rank 2's clock jumps 10 min ahead")
	v, _ := s.InspectJob("j")
	assert.Equal(t, 100*sec, v.NewestNs)

	assert.Zero(t, s.AddSampleRun(sampleRun("j", 0, 101*sec), wall))
	assert.Zero(t, s.AddSampleRun(sampleRun("j", 2, 101*sec), wall), "the outlier's own rank")
	assert.True(t, s.AddRecord(markerRecord("j", 1, 7, 101*sec), wall))
	assert.Zero(t, s.AddSampleRun(sampleRun("j", 3, 101*sec), wall), "a new rank")
	tally := s.Take()
	assert.Zero(t, tally.Rejected(ErrStale))
	v, _ = s.InspectJob("j")
	assert.Equal(t, 101*sec, v.NewestNs, "the second-newest rank's time")

	// Once a second rank is that far ahead, the job is.
	require.Zero(t, s.AddSampleRun(sampleRun("j", 0, 100*sec+10*60*sec), wall))
	v, _ = s.InspectJob("j")
	assert.Equal(t, 100*sec+10*60*sec, v.NewestNs)
	assert.Equal(t, 1, s.AddSampleRun(sampleRun("j", 1, 102*sec), wall))
	tally = s.Take()
	assert.Equal(t, int64(1), tally.Rejected(ErrStale))
}

// TestANewRankIsNotJudgedByOneRank: while one rank alone makes the job's
// event time, a new rank is not refused as stale against it.
func TestANewRankIsNotJudgedByOneRank(t *testing.T) {
	s := New(testConfig())
	require.Zero(t, s.AddSampleRun(sampleRun("j", 1, 100*sec+10*60*sec), wall), "rank 1 comes first, 10 min ahead")
	assert.Zero(t, s.AddSampleRun(sampleRun("j", 0, 100*sec, 101*sec), wall))
	assert.Zero(t, s.AddSampleRun(sampleRun("j", 1, 101*sec), wall))
	tally := s.Take()
	assert.Zero(t, tally.Rejected(ErrStale))
	v, _ := s.InspectJob("j")
	assert.Equal(t, 101*sec, v.NewestNs)
}

// TestRebuildWatermark: the event time rebuilt from the ranks equals the
// one kept as data came.
func TestRebuildWatermark(t *testing.T) {
	s := New(testConfig())
	s.AddSampleRun(sampleRun("j", 0, 100*sec, 130*sec), wall)
	s.AddSampleRun(sampleRun("j", 1, 110*sec), wall)
	s.AddSampleRun(sampleRun("j", 2, 120*sec), wall)
	job := s.Job("j")
	want := job.NewestNs()
	require.Equal(t, 120*sec, want)
	job.RebuildWatermark()
	assert.Equal(t, want, job.NewestNs())
}
