package window

import "slices"

// sampleReplica is the evaluation's copy of a rank's sample times and gaps,
// kept from one snapshot to the next: a snapshot appends the samples pushed
// since the previous one and forgets those the rank dropped, so that the
// time it holds the store's lock grows with what arrived in between, not
// with the window (docs/sizing.md). Entries base, base+1, ... (sample
// numbers, as sampleColumns numbers them) are ts[start:] and gaps[start:],
// in push order.
//
// A sync only appends past the slices' length and moves start, so the
// entries a snapshot handed out stay as they were while it is read; room
// for the next appends is made by reserve, once the snapshot is no longer
// read, without the lock.
type sampleReplica struct {
	ts, gaps []int64
	start    int
	base     uint64
	// added is how many samples the latest sync appended: reserve leaves
	// room for a few rounds of that.
	added int
	// sorted, while sortedOK, holds the gaps of entries
	// [sortedFrom, sortedTo) (indices into ts and gaps) clamped at 0,
	// ascending (sortGaps). Entries do not move in the arrays but by
	// reserve, which moves these indices with them, so the gaps that left
	// the window since are still there to be taken out of sorted.
	sorted               []int64
	sortedFrom, sortedTo int
	sortedOK             bool
}

// sync brings the replica up to c: it drops the entries c dropped and
// appends the ones pushed since the last sync.
func (r *sampleReplica) sync(c *sampleColumns) {
	front := c.frontSeq()
	if end := r.base + uint64(len(r.ts)-r.start); front >= end || front < r.base || c.seq < end {
		// Nothing kept is still buffered (or the columns were not the
		// ones synced before).
		r.start, r.base = len(r.ts), front
		r.sortedOK = false
	} else if front > r.base {
		r.start += int(front - r.base)
		r.base = front
	}
	have := len(r.ts) - r.start
	r.added = c.n - have
	if r.added <= 0 {
		r.added = 0
		return
	}
	r.ts, r.gaps = c.appendFrom(have, r.ts, r.gaps)
}

// live returns the replica's entries, with no room to append to them.
func (r *sampleReplica) live() (ts, gaps []int64) {
	n := len(r.ts)
	return r.ts[r.start:n:n], r.gaps[r.start:n:n]
}

// reserve makes room for the next syncs when less than half of it is
// left: a quarter of the live entries, or four times the latest sync's
// appends if that is more (unless that sync copied most of them: the first
// one, or one after a pause, says nothing of a round's). It moves the live
// entries to the front of the arrays when that frees the room, else to
// larger (or, after a burst, smaller) ones.
func (r *sampleReplica) reserve() {
	n := len(r.ts) - r.start
	round := r.added
	if round > n/2 {
		round = 0
	}
	room := max(n/4, 4*round, 16)
	if cap(r.ts)-len(r.ts) >= room/2 && cap(r.ts) <= 2*(n+room) {
		return
	}
	r.shiftSorted()
	if c := cap(r.ts); c >= n+room && c <= 2*(n+room) {
		copy(r.ts[:n], r.ts[r.start:])
		copy(r.gaps[:n], r.gaps[r.start:])
		r.ts, r.gaps = r.ts[:n], r.gaps[:n]
	} else {
		ts, gaps := make([]int64, n, n+room), make([]int64, n, n+room)
		copy(ts, r.ts[r.start:])
		copy(gaps, r.gaps[r.start:])
		r.ts, r.gaps = ts, gaps
	}
	r.start = 0
}

// shiftSorted follows reserve's move of the live entries to the front:
// the sorted gaps stay valid only if they cover live entries alone.
func (r *sampleReplica) shiftSorted() {
	if r.sortedOK && r.sortedFrom < r.start {
		r.sortedOK = false
	}
	r.sortedFrom -= r.start
	r.sortedTo -= r.start
}

// sortGaps returns the gaps of entries [from, to) clamped at 0, ascending.
// It updates the replica's sorted copy of the previous call's entries by
// the gaps that left and those that came (each batch sorted, then one
// pass to take out and one to merge in), so that a steady job's rounds
// cost its new samples and a linear pass, not a sort of the window. It
// sorts anew when the copy is not valid, when the range does not move
// forward, or when more than half of it changed. The result is read-only
// and valid until the next sortGaps or reserve.
func (r *sampleReplica) sortGaps(from, to int, tmp *gapBatches) []int64 {
	changed := (from - r.sortedFrom) + (to - r.sortedTo)
	incremental := r.sortedOK && from >= r.sortedFrom && from <= r.sortedTo && to >= r.sortedTo && changed <= (to-from)/2
	if incremental {
		tmp.left = clampedSorted(tmp.left[:0], r.gaps[r.sortedFrom:from])
		tmp.came = clampedSorted(tmp.came[:0], r.gaps[r.sortedTo:to])
		if r.sorted, incremental = removeSorted(r.sorted, tmp.left); incremental {
			r.sorted = mergeSorted(r.sorted, tmp.came)
		}
	}
	if !incremental {
		// Also the fallback should a gap that left not be in the copy,
		// which the invariant above rules out: a plain sort is always right.
		r.sorted = clampedSorted(r.sorted[:0], r.gaps[from:to])
	}
	r.sortedFrom, r.sortedTo, r.sortedOK = from, to, true
	n := len(r.sorted)
	return r.sorted[:n:n]
}

// gapBatches are a worker's buffers for the gaps that left and came.
type gapBatches struct{ left, came []int64 }

// clampedSorted appends gaps clamped at 0 to dst and sorts what it
// appended.
func clampedSorted(dst, gaps []int64) []int64 {
	n := len(dst)
	for _, g := range gaps {
		dst = append(dst, max(0, g))
	}
	slices.Sort(dst[n:])
	return dst
}

// removeSorted takes the values of rm (ascending) out of s (ascending),
// one occurrence each, in place; false when one of them is not in s. Each
// is found by bisection and the values between two of them move in one
// copy: a round removes a few values from a long slice.
func removeSorted(s, rm []int64) ([]int64, bool) {
	if len(rm) == 0 {
		return s, true
	}
	w, _ := slices.BinarySearch(s, rm[0])
	i := w
	for _, v := range rm {
		k, found := slices.BinarySearch(s[i:], v)
		if !found {
			return s, false
		}
		w += copy(s[w:], s[i:i+k])
		i += k + 1
	}
	w += copy(s[w:], s[i:])
	return s[:w], true
}

// mergeSorted merges add (ascending) into s (ascending) in place, from the
// back: each value of add, largest first, goes past the values above it,
// which move in one copy, and the values below add's smallest stay where
// they are.
func mergeSorted(s, add []int64) []int64 {
	if len(add) == 0 {
		return s
	}
	end := len(s) // s[:end] are the values not yet moved
	s = slices.Grow(s, len(add))[:len(s)+len(add)]
	for j := len(add) - 1; j >= 0; j-- {
		v := add[j]
		// The values above v, which go after it, are s[p:end].
		p := end
		for lo := 0; lo < p; {
			m := int(uint(lo+p) >> 1)
			if s[m] > v {
				p = m
			} else {
				lo = m + 1
			}
		}
		copy(s[p+j+1:end+j+1], s[p:end])
		s[p+j] = v
		end = p
	}
	return s
}

// appendFrom appends the entries from the i-th oldest on to ts and aux.
func (r *timedRing[A]) appendFrom(i int, ts []int64, aux []A) ([]int64, []A) {
	a, b := r.segments()
	for _, seg := range [2][2]int{a, b} {
		k := min(i, seg[1]-seg[0])
		i -= k
		from := seg[0] + k
		ts = append(ts, r.ts[from:seg[1]]...)
		aux = append(aux, r.aux[from:seg[1]]...)
	}
	return ts, aux
}

// ReserveReplicas makes room, in the replicas of the ranks the latest
// snapshot taken in sc read, for the samples the next snapshot will copy.
// It ends that snapshot (it may move what the snapshot's columns show):
// call it once the snapshot and the results' evaluation are done, without
// the store's lock, so that the next snapshot copies the new samples and
// nothing else under it. Replicas are read only by snapshots, which a
// job's evaluations take one at a time.
func (sc *Scratch) ReserveReplicas() {
	for _, rep := range sc.replicas {
		rep.reserve()
	}
	clear(sc.replicas)
	sc.replicas = sc.replicas[:0]
}
