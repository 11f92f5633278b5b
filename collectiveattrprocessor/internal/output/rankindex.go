package output

import "iter"

// RankIndex maps (job, rank) to a V. A batch's sample runs go through one
// job's ranks in turn, so the ranks of the job found or put last (the
// indexed job) are found in a slice by rank, below MaxIndexedRank, which
// costs less than hashing (job, rank) for each; other jobs, negative ranks
// and ranks past the bound are found in a map, which holds every entry.
// Finding or putting a rank of another job makes that job the indexed one.
//
// The zero V marks an empty slot of the slice: an entry whose value is the
// zero V is found, but through the map. The zero RankIndex is empty and
// ready to use.
type RankIndex[V comparable] struct {
	all map[RankKey]V
	// job is the indexed job; byRank its entries by rank (the zero V where
	// it has none).
	job    string
	byRank []V
}

// RankKey is a (job, rank).
type RankKey struct {
	Job  string
	Rank int64
}

// MaxIndexedRank bounds the ranks a RankIndex finds by index: the slice
// grows to the highest such rank put, a V each.
const MaxIndexedRank = 1 << 14

// Indexed returns (job, rank)'s value if the slice holds it. It is the
// first look, small enough to inline into the callers that make one per
// sample run; GetOrAdd is the rest.
func (x *RankIndex[V]) Indexed(job string, rank int64) (v V, found bool) {
	if uint64(rank) < uint64(len(x.byRank)) && job == x.job {
		v = x.byRank[rank]
		var zero V
		return v, v != zero
	}
	return v, false
}

// GetOrAdd returns (job, rank)'s value, found true; if it has none, it
// puts add(job, rank) and returns it, found false. It looks in the map,
// which holds every entry, so it is right whether or not Indexed was asked
// first; the callers ask Indexed first, and GetOrAdd does not ask again.
func (x *RankIndex[V]) GetOrAdd(job string, rank int64, add func(job string, rank int64) V) (v V, found bool) {
	v, found = x.all[RankKey{job, rank}]
	if !found {
		v = add(job, rank)
		x.put(job, rank, v)
		return v, false
	}
	x.index(job, rank, v)
	return v, true
}

// put sets (job, rank)'s value to v.
func (x *RankIndex[V]) put(job string, rank int64, v V) {
	if x.all == nil {
		x.all = map[RankKey]V{}
	}
	x.all[RankKey{job, rank}] = v
	x.index(job, rank, v)
}

// index makes job the indexed one, if rank is below the bound, and puts v
// in rank's slot.
func (x *RankIndex[V]) index(job string, rank int64, v V) {
	if uint64(rank) >= MaxIndexedRank {
		return
	}
	if job != x.job {
		clear(x.byRank)
		x.job = job
	}
	if rank >= int64(len(x.byRank)) {
		x.byRank = append(x.byRank, make([]V, int(rank)+1-len(x.byRank))...)
	}
	x.byRank[rank] = v
}

// Delete removes (job, rank)'s entry, if it has one.
func (x *RankIndex[V]) Delete(job string, rank int64) {
	delete(x.all, RankKey{job, rank})
	if job == x.job && uint64(rank) < uint64(len(x.byRank)) {
		var zero V
		x.byRank[rank] = zero
	}
}

// All yields every entry, in no particular order. The loop may Delete the
// entry it is given.
func (x *RankIndex[V]) All() iter.Seq2[RankKey, V] {
	return func(yield func(RankKey, V) bool) {
		for k, v := range x.all {
			if !yield(k, v) {
				return
			}
		}
	}
}

// Clear removes every entry. The slice keeps its length: the ranks of the
// next job indexed need not grow it again.
func (x *RankIndex[V]) Clear() {
	clear(x.all)
	clear(x.byRank)
	x.job = ""
}

// Len is the number of entries.
func (x *RankIndex[V]) Len() int { return len(x.all) }
