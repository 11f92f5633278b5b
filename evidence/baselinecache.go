package evidence

import "sort"

// BaselineCache keeps one rank's side medians (the medians of the baseline
// span before and after each sample) from one evaluation to the next. A
// sample's medians depend only on the samples within one span of it, so
// when the rank's samples are last time's with some dropped at the front
// and some added at the end, only the samples within a span of either end
// are recomputed; the rest are moved from last time's.
//
// The cache compares the samples themselves with the ones it computed on,
// so it never needs telling what changed: evictions, out-of-order inserts,
// rewritten values and a new span all show as a shorter run of samples in
// common, down to none (everything recomputed). It holds a copy of the
// times and values and the four side columns: 40 bytes per sample. Its
// zero value is empty and ready; it is rebuilt by use, never saved.
type BaselineCache struct {
	span          int64
	times, vals   []int64
	left, right   []int64
	leftN, rightN []int32
}

// sideScratch is the memory the cache recomputes a stretch of samples in.
type sideScratch struct {
	left, right   []int64
	leftN, rightN []int32
}

func (s *sideScratch) grow(n int) {
	if cap(s.left) < n {
		s.left, s.right = make([]int64, n), make([]int64, n)
		s.leftN, s.rightN = make([]int32, n), make([]int32, n)
	}
	s.left, s.right = s.left[:n], s.right[:n]
	s.leftN, s.rightN = s.leftN[:n], s.rightN[:n]
}

// sides returns what sideMedians writes for times and vals, reusing the
// last call's results where the samples within a span are the same. The
// slices are the cache's own, valid until its next use.
func (c *BaselineCache) sides(times, vals []int64, span int64, w *windowMedian, ss *sideScratch) (left, right []int64, leftN, rightN []int32) {
	n := len(times)
	p, q, d := 0, 0, 0 // [p, q) of the new samples are old [p+d, q+d)
	if c.span == span {
		p, q, d = c.reusable(times, vals)
	}
	if q > p {
		copy(c.left[p:q], c.left[p+d:q+d])
		copy(c.right[p:q], c.right[p+d:q+d])
		copy(c.leftN[p:q], c.leftN[p+d:q+d])
		copy(c.rightN[p:q], c.rightN[p+d:q+d])
	} else {
		p, q = n, n
	}
	c.span = span
	c.times = append(c.times[:0], times...)
	c.vals = append(c.vals[:0], vals...)
	c.left, c.right = resize(c.left, n), resize(c.right, n)
	c.leftN, c.rightN = resize(c.leftN, n), resize(c.rightN, n)
	c.recompute(0, p, span, w, ss)
	c.recompute(q, n, span, w, ss)
	return c.left, c.right, c.leftN, c.rightN
}

// reusable finds the run of new samples that are the old ones shifted by d
// (samples dropped at the front) and, within it, the stretch [p, q) whose
// spans on both sides hold the same samples as before: no sample outside
// the run, old or new, is within a span of them.
func (c *BaselineCache) reusable(times, vals []int64) (p, q, d int) {
	old, n := len(c.times), len(times)
	if n == 0 || old == 0 {
		return 0, 0, 0
	}
	d = sort.Search(old, func(k int) bool { return c.times[k] >= times[0] })
	for d < old && c.times[d] == times[0] && c.vals[d] != vals[0] {
		d++
	}
	if d == old || c.times[d] != times[0] {
		return 0, 0, 0
	}
	m := 0
	for m < n && m+d < old && times[m] == c.times[m+d] && vals[m] == c.vals[m+d] {
		m++
	}
	span := c.span
	// Left side: [t_i - span, t_i) must not reach the old sample before
	// the run (the new samples have none before it).
	if d > 0 {
		before := c.times[d-1]
		for p < m && satSub(times[p], span) <= before {
			p++
		}
	}
	// Right side: [t_i, t_i + span] must not reach the first sample after
	// the run, new or old.
	end := m
	if m < n {
		end = sort.Search(m, func(i int) bool { return satAdd(times[i], span) >= times[m] })
	}
	if m+d < old {
		end = min(end, sort.Search(m, func(i int) bool { return satAdd(times[i], span) >= c.times[m+d] }))
	}
	return p, max(p, end), d
}

// recompute writes the side medians of samples [from, to) from the samples
// their spans reach.
func (c *BaselineCache) recompute(from, to int, span int64, w *windowMedian, ss *sideScratch) {
	if from >= to {
		return
	}
	times := c.times
	start := satSub(times[from], span)
	lo := sort.Search(from, func(k int) bool { return times[k] >= start })
	stop := satAdd(times[to-1], span)
	hi := to + sort.Search(len(times)-to, func(k int) bool { return times[to+k] > stop })
	ss.grow(hi - lo)
	sideMedians(times[lo:hi], c.vals[lo:hi], span, ss.left, ss.right, ss.leftN, ss.rightN, w)
	copy(c.left[from:to], ss.left[from-lo:to-lo])
	copy(c.right[from:to], ss.right[from-lo:to-lo])
	copy(c.leftN[from:to], ss.leftN[from-lo:to-lo])
	copy(c.rightN[from:to], ss.rightN[from-lo:to-lo])
}

// resize returns s with length n, keeping its first min(len(s), n) values.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	t := make([]T, n, n+n/8)
	copy(t, s)
	return t
}
