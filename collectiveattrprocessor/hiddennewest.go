package collectiveattrprocessor

import (
	"cmp"
	"slices"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
)

// newestHidden keeps, per (job, rank), the newest gpu.memory.hidden point
// past a tick's cap (maxHiddenPointsPerTick). A job past the cap settles a
// point run of each of its ranks every batch: like HiddenPeaks, it finds
// the ranks of the job settled last by index (ranks below
// maxIndexedHiddenRank), which costs less than hashing (job, rank) per run.
type newestHidden struct {
	points []output.HiddenPoint
	// at is the index in points of each (job, rank).
	at map[rankKey]int
	// byRank is, for the job settled last (byRankJob), 1 + the index in
	// points of each rank's point (0: none yet).
	byRankJob string
	byRank    []int32
}

// maxIndexedHiddenRank bounds the ranks newestHidden indexes.
const maxIndexedHiddenRank = 1 << 14

// keep settles n points of one rank past the cap, the newest of them p,
// and returns how many are dropped: the rank's newest point past the cap
// is kept, the others are dropped.
func (h *newestHidden) keep(p output.HiddenPoint, n int) (dropped int64) {
	i, ok := h.index(p.JobID, p.Rank)
	if !ok {
		h.points = append(h.points, p)
		h.note(p.JobID, p.Rank, len(h.points)-1)
		return int64(n - 1)
	}
	if old := &h.points[i]; old.TimestampNs <= p.TimestampNs {
		*old = p
	}
	return int64(n)
}

// index returns the index in points of (job, rank)'s point, if it has one.
func (h *newestHidden) index(job string, rank int64) (int, bool) {
	if job == h.byRankJob && uint64(rank) < uint64(len(h.byRank)) {
		if i := h.byRank[rank]; i > 0 {
			return int(i) - 1, true
		}
	}
	i, ok := h.at[rankKey{job, rank}]
	if ok {
		h.indexRank(job, rank, i)
	}
	return i, ok
}

// note records that (job, rank)'s point is points[i].
func (h *newestHidden) note(job string, rank int64, i int) {
	if h.at == nil {
		h.at = map[rankKey]int{}
	}
	h.at[rankKey{job, rank}] = i
	h.indexRank(job, rank, i)
}

// indexRank makes job the indexed one and indexes rank's point i.
func (h *newestHidden) indexRank(job string, rank int64, i int) {
	if uint64(rank) >= maxIndexedHiddenRank {
		return
	}
	if job != h.byRankJob {
		clear(h.byRank)
		h.byRankJob = job
	}
	if rank >= int64(len(h.byRank)) {
		h.byRank = append(h.byRank, make([]int32, int(rank)+1-len(h.byRank))...)
	}
	h.byRank[rank] = int32(i + 1)
}

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
	clear(h.at)
	clear(h.byRank)
	h.byRankJob = ""
	return dst
}
