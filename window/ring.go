package window

// ring is a FIFO that grows on demand up to the capacity its caller allows.
// Buffers start small: most jobs never come near max_events_per_rank, so the
// bound costs nothing until it is reached.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func (r *ring[T]) len() int { return r.n }

// at returns the i-th oldest element.
func (r *ring[T]) at(i int) *T {
	j := r.head + i
	if j >= len(r.buf) {
		j -= len(r.buf)
	}
	return &r.buf[j]
}

func (r *ring[T]) front() *T { return &r.buf[r.head] }

// push appends v, growing the storage up to maxCap elements. The caller
// evicts first when the ring is at its bound.
func (r *ring[T]) push(v T, maxCap int) {
	if r.n == len(r.buf) {
		r.grow(maxCap)
	}
	j := r.head + r.n
	if j >= len(r.buf) {
		j -= len(r.buf)
	}
	r.buf[j] = v
	r.n++
}

func (r *ring[T]) grow(maxCap int) {
	buf := make([]T, grownCap(len(r.buf), maxCap))
	for i := range r.n {
		buf[i] = *r.at(i)
	}
	r.buf, r.head = buf, 0
}

// grownCap is the storage size after n when a ring of at most maxCap
// entries is full. A rank's rings grow while its first window fills, then
// hold their size (the CLI's unbounded ones never shrink): doubling to the
// end would leave up to half of the buffers empty for good, 32 bytes a
// sample of 16. From quarterGrowthFrom entries on a ring grows by a
// quarter, so it holds at most 20 bytes a sample of 16.
func grownCap(n, maxCap int) int {
	c := 2 * n
	if n >= quarterGrowthFrom {
		c = n + n/4
	}
	c = min(max(c, 16), maxCap)
	if c <= n {
		c = n + 1
	}
	return c
}

// quarterGrowthFrom is the storage size from which rings grow by a quarter
// instead of doubling.
const quarterGrowthFrom = 64

// popFront drops the oldest element.
func (r *ring[T]) popFront() {
	var zero T
	r.buf[r.head] = zero
	r.head++
	if r.head == len(r.buf) {
		r.head = 0
	}
	r.n--
}

// dropFront drops the k oldest elements, clearing them so that the ring
// pins nothing they pointed to.
func (r *ring[T]) dropFront(k int) {
	if k <= 0 {
		return
	}
	if end := r.head + k; end <= len(r.buf) {
		clear(r.buf[r.head:end])
	} else {
		clear(r.buf[r.head:])
		clear(r.buf[:end-len(r.buf)])
	}
	r.head += k
	if r.head >= len(r.buf) {
		r.head -= len(r.buf)
	}
	r.n -= k
}

// timedRing is a FIFO of entries with an event time, held as two columns
// that share one index: the times and what goes with each (aux, a type
// without pointers, so that the columns cost the garbage collector
// nothing to scan). Columns
// let a snapshot copy a rank's times (and a sample's gaps) as whole
// slices, and keep an entry as small as its fields.
//
// It notes whether an entry older than one pushed before it has arrived
// since the ring was last empty; while none has (a rank's samples and
// markers nearly always arrive in time order), older finds a trim's cut by
// search instead of reading every entry the trim drops.
type timedRing[A any] struct {
	ts         []int64
	aux        []A
	head, n    int
	disordered bool
	lastNs     int64 // the time pushed last
	// maxNs is the newest time pushed since the ring was last empty: no
	// entry is newer, so a duplicate check of a newer time reads nothing.
	maxNs int64
}

func (r *timedRing[A]) len() int { return r.n }

// index is the storage index of the i-th oldest entry.
func (r *timedRing[A]) index(i int) int {
	j := r.head + i
	if j >= len(r.ts) {
		j -= len(r.ts)
	}
	return j
}

// at returns the time of the i-th oldest entry.
func (r *timedRing[A]) at(i int) int64 { return r.ts[r.index(i)] }

// auxAt returns what goes with the i-th oldest entry.
func (r *timedRing[A]) auxAt(i int) *A { return &r.aux[r.index(i)] }

func (r *timedRing[A]) frontNs() int64 { return r.ts[r.head] }

// push appends an entry of time ts, growing the storage as ring does up to
// maxCap entries. The caller evicts first when the ring is at its bound.
func (r *timedRing[A]) push(ts int64, aux A, maxCap int) {
	if r.n == 0 {
		r.disordered = false
		r.maxNs = ts
	} else if ts < r.lastNs {
		r.disordered = true
	}
	r.lastNs, r.maxNs = ts, max(r.maxNs, ts)
	if r.n == len(r.ts) {
		r.grow(maxCap)
	}
	j := r.index(r.n)
	r.ts[j], r.aux[j] = ts, aux
	r.n++
}

func (r *timedRing[A]) grow(maxCap int) { r.growTo(grownCap(len(r.ts), maxCap)) }

// reserve grows the storage, at once, to the size k more pushes would
// grow it to.
func (r *timedRing[A]) reserve(k, maxCap int) {
	c := len(r.ts)
	for r.n+k > c {
		c = grownCap(c, maxCap)
	}
	if c > len(r.ts) {
		r.growTo(c)
	}
}

func (r *timedRing[A]) growTo(c int) {
	ts, aux := make([]int64, c), make([]A, c)
	r.copyTo(ts, aux)
	r.ts, r.aux, r.head = ts, aux, 0
}

// copyTo copies the entries, oldest first, to the front of ts and aux
// (either may be nil), segment by segment.
func (r *timedRing[A]) copyTo(ts []int64, aux []A) {
	a, b := r.segments()
	if ts != nil {
		copy(ts[copy(ts, r.ts[a[0]:a[1]]):], r.ts[b[0]:b[1]])
	}
	if aux != nil {
		copy(aux[copy(aux, r.aux[a[0]:a[1]]):], r.aux[b[0]:b[1]])
	}
}

// segments are the storage ranges [from, to) of the entries, oldest first:
// the second is empty unless the ring wraps.
func (r *timedRing[A]) segments() (a, b [2]int) {
	end := r.head + r.n
	if end <= len(r.ts) {
		return [2]int{r.head, end}, [2]int{0, 0}
	}
	return [2]int{r.head, len(r.ts)}, [2]int{0, end - len(r.ts)}
}

// dropFront drops the k oldest entries. Aux types hold no pointers, so
// nothing is cleared.
func (r *timedRing[A]) dropFront(k int) {
	if k <= 0 {
		return
	}
	r.head = r.index(k)
	r.n -= k
}

// older returns how many front entries have a time before cutoffNs: the
// ones a trim drops.
func (r *timedRing[A]) older(cutoffNs int64) int { return r.olderBy(cutoffNs, r.at) }

// olderBy is older reading the time of entry i as at(i).
func (r *timedRing[A]) olderBy(cutoffNs int64, at func(int) int64) int {
	if r.disordered {
		k := 0
		for k < r.n && at(k) < cutoffNs {
			k++
		}
		return k
	}
	// Entries before lo are older than the cutoff, those from hi on are
	// not. Samples and markers come at a steady rate, so the cut is about
	// where the cutoff falls between the times at lo and hi-1: a few
	// interpolation steps read a few cache lines where a binary search
	// would miss on a dozen; a binary search finishes what they leave.
	lo, hi := 0, r.n
	for range maxInterpolationSteps {
		if hi-lo < 16 {
			break
		}
		first, last := at(lo), at(hi-1)
		if cutoffNs <= first {
			return lo
		}
		if cutoffNs > last {
			return hi
		}
		// In float64: the times' difference may overflow an int64.
		f := (float64(cutoffNs) - float64(first)) / (float64(last) - float64(first))
		m := min(max(lo+int(f*float64(hi-1-lo)), lo), hi-1)
		if at(m) < cutoffNs {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if at(m) < cutoffNs {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// maxInterpolationSteps bounds older's interpolation steps: on times that
// are far from evenly spread, each step may cut off little.
const maxInterpolationSteps = 4
