package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// TestEmittedMemoryOutlivesTheJob: what a job emitted is remembered after
// the job is forgotten, until emitted_memory_ttl after its last data, and
// for at most MaxEmittedJobs jobs.
func TestEmittedMemoryOutlivesTheJob(t *testing.T) {
	cfg := testConfig()
	cfg.EmittedMemoryTTL = 10 * time.Minute
	cfg.MaxEmittedJobs = 2
	s := New(cfg)
	result := &attribution.Result{Rank: 0, IntervalStartNs: 103 * sec, IntervalEndNs: uint64(106 * sec)}
	emitJob := func(id string, at time.Time) bool {
		s.AddSampleRun(sampleRun(id, 0, 100*sec, 110*sec), at)
		_, _, ok := s.Claim(s.Job(id), result, 0, true, nil)
		return ok
	}
	require.True(t, emitJob("a", wall))
	s.Sweep(wall.Add(time.Minute), 30*time.Second, false, false) // a is idle: forgotten
	require.Nil(t, s.Job("a"))
	assert.Equal(t, &EmittedJob{LastSeen: wall, Ranks: []EmittedRank{{Rank: 0, EndNs: 106 * sec}}}, s.Emitted("a"))
	assert.False(t, emitJob("a", wall.Add(time.Minute)), "replayed within the TTL")
	s.Forget("a")

	// TTL: 10 min after a's last data (wall + 1 min), a is forgotten.
	s.Sweep(wall.Add(11*time.Minute), 30*time.Second, false, false)
	assert.Nil(t, s.Emitted("a"))
	assert.True(t, emitJob("a", wall.Add(12*time.Minute)), "replayed after the TTL")

	// Count: a third job makes the one seen longest ago give way.
	require.True(t, emitJob("b", wall.Add(13*time.Minute)))
	require.True(t, emitJob("c", wall.Add(14*time.Minute)))
	assert.Nil(t, s.Emitted("a"))
	assert.NotNil(t, s.Emitted("b"))
	assert.NotNil(t, s.Emitted("c"))
}
