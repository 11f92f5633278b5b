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

// TestEmittedFindOrdersRanksThenSteps: the entries stay sorted by rank,
// a rank's other intervals before its persistent step, and each note
// lands on its own entry, whatever the order they come in.
func TestEmittedFindOrdersRanksThenSteps(t *testing.T) {
	var e EmittedJob
	notes := []EmittedRank{{5, false, 50}, {1, false, 10}, {5, true, 55}, {3, false, 30}, {1, true, 15}, {5, false, 40}, {0, false, 1}}
	for _, n := range notes {
		e.note(n.Rank, n.Persistent, n.EndNs)
	}
	assert.Equal(t, []EmittedRank{{0, false, 1}, {1, false, 10}, {1, true, 15}, {3, false, 30}, {5, false, 50}, {5, true, 55}}, e.Ranks,
		"sorted, and a later, earlier-ending interval does not move an end back")
	for i, want := range e.Ranks {
		at, found := e.find(want.Rank, want.Persistent)
		assert.True(t, found, "%+v", want)
		assert.Equal(t, i, at, "%+v", want)
	}
	at, found := e.find(4, false)
	assert.False(t, found)
	assert.Equal(t, 4, at, "where rank 4 goes")
	at, found = e.find(3, true)
	assert.False(t, found)
	assert.Equal(t, 4, at, "rank 3's step goes after its other interval")
}
