package collectiveattrprocessor

import (
	"cmp"
	"slices"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
)

// newestHidden keeps, per (job, rank), the newest gpu.memory.hidden point
// past a tick's cap (maxHiddenPointsPerTick). A job past the cap settles a
// point run of each of its ranks every batch: like HiddenPeaks, it finds
// the ranks of the job settled last by index (output.RankIndex), which
// costs less than hashing (job, rank) per run.
type newestHidden struct {
	points []output.HiddenPoint
	// at is 1 + the index in points of each (job, rank)'s point: the zero
	// value is RankIndex's empty slot.
	at output.RankIndex[int32]
}

// keep settles n points of one rank past the cap, the newest of them p,
// and returns how many are dropped: the rank's newest point past the cap
// is kept, the others are dropped.
func (h *newestHidden) keep(p output.HiddenPoint, n int) (dropped int64) {
	i, found := h.at.Indexed(p.JobID, p.Rank)
	if !found {
		i, found = h.at.GetOrAdd(p.JobID, p.Rank, h.next)
	}
	if !found {
		h.points = append(h.points, p)
		return int64(n - 1)
	}
	if old := &h.points[i-1]; old.TimestampNs <= p.TimestampNs {
		*old = p
	}
	return int64(n)
}

// next is the entry in at of the point keep appends next.
func (h *newestHidden) next(string, int64) int32 { return int32(len(h.points)) + 1 }

// take appends the points kept to dst, by job, then rank, and starts anew.
func (h *newestHidden) take(dst []output.HiddenPoint) []output.HiddenPoint {
	if len(h.points) == 0 {
		return dst
	}
	slices.SortFunc(h.points, func(a, b output.HiddenPoint) int {
		return cmp.Or(cmp.Compare(a.JobID, b.JobID), cmp.Compare(a.Rank, b.Rank))
	})
	dst = append(dst, h.points...)
	h.points = h.points[:0]
	h.at.Clear()
	return dst
}
