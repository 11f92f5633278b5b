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
//
// A switch of the indexed job empties only the slots filled since the last
// switch, not the slice up to the highest rank (16 384 with the largest
// worlds): with two jobs' runs alternating every few runs, each switch
// then costs the few ranks found in between, and Indexed is as before.
type RankIndex[V comparable] struct {
	all map[RankKey]V
	// job is the indexed job; byRank its entries by rank (the zero V where
	// it has none).
	job    string
	byRank []V
	// filled holds the rank of every slot filled since the indexed job
	// last changed, a rank again when its slot was emptied by Delete and
	// filled anew; never more than len(byRank) of them.
	filled []int32
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
		x.forget()
		x.job = job
	}
	if rank >= int64(len(x.byRank)) {
		x.byRank = append(x.byRank, make([]V, int(rank)+1-len(x.byRank))...)
	}
	var zero V
	if v != zero && x.byRank[rank] == zero {
		if len(x.filled) == len(x.byRank) {
			// Deletes and refills of the same ranks: keep each filled
			// slot once, which is fewer than len(byRank) as rank's is
			// empty.
			x.filled = x.filled[:0]
			for r, v := range x.byRank {
				if v != zero {
					x.filled = append(x.filled, int32(r))
				}
			}
		}
		x.filled = append(x.filled, int32(rank))
	}
	x.byRank[rank] = v
}

// forget empties the slots filled since the indexed job last changed: one
// by one when they are few, else the whole slice at once, which is faster
// per slot (HiddenPeaks and newestHidden Clear after every rank was filled).
func (x *RankIndex[V]) forget() {
	if len(x.filled) > len(x.byRank)/16 {
		clear(x.byRank)
	} else {
		var zero V
		for _, r := range x.filled {
			x.byRank[r] = zero
		}
	}
	x.filled = x.filled[:0]
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
	x.forget()
	x.job = ""
}

// Len is the number of entries.
func (x *RankIndex[V]) Len() int { return len(x.all) }
