package window

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
}

// sync brings the replica up to c: it drops the entries c dropped and
// appends the ones pushed since the last sync.
func (r *sampleReplica) sync(c *sampleColumns) {
	front := c.frontSeq()
	if end := r.base + uint64(len(r.ts)-r.start); front >= end || front < r.base || c.seq < end {
		// Nothing kept is still buffered (or the columns were not the
		// ones synced before).
		r.start, r.base = len(r.ts), front
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
