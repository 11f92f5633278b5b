package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

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
	c := 2 * len(r.buf)
	if len(r.buf) >= 1024 {
		// A rank's rings grow while its first window fills, then hold
		// their size: doubling to the end would leave up to half of the
		// largest buffers empty for good.
		c = len(r.buf) + len(r.buf)/4
	}
	if c < 16 {
		c = 16
	}
	if c > maxCap {
		c = maxCap
	}
	if c <= len(r.buf) {
		c = len(r.buf) + 1
	}
	buf := make([]T, c)
	for i := range r.n {
		buf[i] = *r.at(i)
	}
	r.buf, r.head = buf, 0
}

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

// timedRing is a ring of entries with an event time. It notes whether an
// entry older than one pushed before it has arrived since the ring was last
// empty; while none has (a rank's samples and markers nearly always arrive
// in time order), older finds a trim's cut by search instead of reading
// every entry the trim drops, long out of cache by then.
type timedRing[T any] struct {
	ring[T]
	disordered bool
	lastNs     int64 // the time pushed last
}

// push appends v, of time ts (it hides ring.push, so that no entry skips
// the order tracking).
func (r *timedRing[T]) push(v T, ts int64, maxCap int) {
	if r.n == 0 {
		r.disordered = false
	} else if ts < r.lastNs {
		r.disordered = true
	}
	r.lastNs = ts
	r.ring.push(v, maxCap)
}

// older returns how many front entries have a time (tsOf) before cutoffNs:
// the ones a trim drops.
func (r *timedRing[T]) older(cutoffNs int64, tsOf func(*T) int64) int {
	if r.disordered {
		k := 0
		for k < r.n && tsOf(r.at(k)) < cutoffNs {
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
		first, last := tsOf(r.at(lo)), tsOf(r.at(hi-1))
		if cutoffNs <= first {
			return lo
		}
		if cutoffNs > last {
			return hi
		}
		// In float64: the times' difference may overflow an int64.
		f := (float64(cutoffNs) - float64(first)) / (float64(last) - float64(first))
		m := min(max(lo+int(f*float64(hi-1-lo)), lo), hi-1)
		if tsOf(r.at(m)) < cutoffNs {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if tsOf(r.at(m)) < cutoffNs {
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
