package store

import (
	"math"
	"slices"
	"time"

	"github.com/collectiveattr/collectiveattr/evidence"
)

// Job is the buffered state of one job. Its methods are the store's: a Job
// is read and changed under whatever serialises the Store, or, once
// detached by Sweep, by its one holder.
type Job struct {
	id    string
	ranks map[int64]*rankBuffer
	// byRank holds, indexed by rank, the buffers of the ranks below its
	// length (nil for a rank not tracked): ranks are small and dense (0 to
	// world size - 1), and the hot path looks one up per run of records.
	byRank []*rankBuffer
	// newestNs is the job's event time: the window and the settle delay
	// are measured from it. It is the second-newest of the ranks' newest
	// times (watermark.go), so that one rank cannot move it ahead.
	newestNs int64
	wm       watermark
	// lastSeen is the wall-clock time of the job's latest accepted record.
	lastSeen time.Time
	// dirty says the job received data since it was last swept.
	dirty bool
	// events is the number of buffered entries over all ranks.
	events int
	// collectives interns the collective identities of evidence mode's
	// markers (nil in the reference mode).
	collectives *evidence.CollectiveTable
	// lines are the furthest positions accepted per file (duplicates.go).
	lines fileLines
	// unsaved says the job changed (data, an emitted result) since its
	// last checkpoint.
	unsaved bool
	// final says the job was finalised before a restart and restored
	// because its results may not have reached the downstream: the next
	// Sweep finalises it again.
	final bool
}

// ID is the job id.
func (j *Job) ID() string { return j.id }

// Events is the number of buffered entries over all ranks.
func (j *Job) Events() int { return j.events }

// rank returns the buffer of rank r, nil when it has none.
func (j *Job) rank(r int64) *rankBuffer {
	if uint64(r) < uint64(len(j.byRank)) {
		return j.byRank[r]
	}
	return j.ranks[r]
}

// addRank tracks rb as the buffer of rank r. byRank grows to hold r only
// while it stays dense (r below twice the ranks tracked, plus some), so a
// job of a few scattered large ranks keeps them in the map alone; when it
// grows, it takes over the ranks below r that the map alone held.
func (j *Job) addRank(r int64, rb *rankBuffer) {
	j.ranks[r] = rb
	if r < 0 || r >= 2*int64(len(j.ranks))+64 {
		return
	}
	if n := int(r) + 1; n > len(j.byRank) {
		old := len(j.byRank)
		j.byRank = slices.Grow(j.byRank, n-old)[:n]
		for i := old; i < n; i++ {
			j.byRank[i] = j.ranks[int64(i)]
		}
	}
	j.byRank[r] = rb
}

// trimSlackDivisor sets how far (window / trimSlackDivisor) a rank's oldest
// entry may fall behind the window before a record pushed to it trims it:
// at most ~3% more entries than the window holds, for trims that drop a
// run of entries at once.
const trimSlackDivisor = 32

// lazyCutoffNs is the window's cutoff minus the trim slack.
func (j *Job) lazyCutoffNs(window time.Duration) int64 {
	slack := window + window/trimSlackDivisor
	if j.newestNs < math.MinInt64+int64(slack) {
		return math.MinInt64
	}
	return j.newestNs - int64(slack)
}

// cutoffNs is the oldest event time the window keeps.
func (j *Job) cutoffNs(window time.Duration) int64 { return cutoffAt(j.newestNs, window) }

// cutoffAt is the oldest event time the window keeps when the newest event
// time is newestNs.
func cutoffAt(newestNs int64, window time.Duration) int64 {
	if newestNs < math.MinInt64+int64(window) {
		return math.MinInt64
	}
	return newestNs - int64(window)
}

// Host is the host name of rank's telemetry ("" when unknown or the rank
// is not buffered).
func (j *Job) Host(rank int64) string {
	if rb := j.ranks[rank]; rb != nil {
		return rb.host
	}
	return ""
}
