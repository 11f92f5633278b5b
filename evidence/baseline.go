package evidence

import (
	"math"
	"slices"
	"sort"
)

// madToSigma turns a median absolute deviation into a standard deviation
// for normal noise.
const madToSigma = 1.4826

// windowMedian is a sorted multiset of the values inside a sliding window.
type windowMedian struct {
	sorted []int64
	extra  []int64 // scratch of medianWith
}

func (w *windowMedian) reset() { w.sorted = w.sorted[:0] }

// fill makes vals the window's values: sorting them at once costs less
// than inserting them one by one.
func (w *windowMedian) fill(vals []int64) {
	w.sorted = append(w.sorted[:0], vals...)
	slices.Sort(w.sorted)
}

// lowerBound is the index of the first value >= v. The loop halves a
// range of fixed length whatever the comparison says, which the compiler
// turns into a conditional move: the windows' values are noise, so a
// branch on them would be mispredicted half the time.
func (w *windowMedian) lowerBound(v int64) int {
	s := w.sorted
	base, n := 0, len(s)
	for n > 1 {
		half := n / 2
		if s[base+half-1] < v {
			base += half
		}
		n -= half
	}
	if n == 1 && s[base] < v {
		base++
	}
	return base
}

// lowerBound2 is lowerBound of a and of b in one loop: the two searches
// depend on nothing of each other, so their loads overlap.
func (w *windowMedian) lowerBound2(a, b int64) (int, int) {
	s := w.sorted
	ba, bb, n := 0, 0, len(s)
	for n > 1 {
		half := n / 2
		if s[ba+half-1] < a {
			ba += half
		}
		if s[bb+half-1] < b {
			bb += half
		}
		n -= half
	}
	if n == 1 {
		if s[ba] < a {
			ba++
		}
		if s[bb] < b {
			bb++
		}
	}
	return ba, bb
}

// add and remove move the values above v by hand: slices.Insert and
// slices.Delete would check their arguments' overlap and clear the slot
// left behind, for each of a round's thousands of moves.
func (w *windowMedian) add(v int64) {
	i := w.lowerBound(v)
	w.sorted = append(w.sorted, 0)
	copy(w.sorted[i+1:], w.sorted[i:])
	w.sorted[i] = v
}

func (w *windowMedian) remove(v int64) {
	if i := w.lowerBound(v); i < len(w.sorted) && w.sorted[i] == v {
		copy(w.sorted[i:], w.sorted[i+1:])
		w.sorted = w.sorted[:len(w.sorted)-1]
	}
}

// replace removes one old and adds v: a window that slides by one sample
// moves only the values between the two positions, which for a level
// with noise are few.
func (w *windowMedian) replace(old, v int64) {
	if old == v {
		return
	}
	i, p := w.lowerBound2(old, v)
	if i == len(w.sorted) || w.sorted[i] != old {
		w.add(v)
		return
	}
	if p <= i {
		copy(w.sorted[p+1:i+1], w.sorted[p:i])
		w.sorted[p] = v
		return
	}
	copy(w.sorted[i:p-1], w.sorted[i+1:p])
	w.sorted[p-1] = v
}

// median is the lower median (the window is never empty when asked).
func (w *windowMedian) median() int64 { return w.sorted[(len(w.sorted)-1)/2] }

// maxMergedExtra is the most values medianWith merges into the window by
// position; with more it selects over a copy.
const maxMergedExtra = 8

// medianWith is the lower median of the window's values together with
// extra, without changing the window. extra must not be empty when the
// window is.
func (w *windowMedian) medianWith(extra []int64) int64 {
	e := len(extra)
	if e == 0 {
		return w.median()
	}
	if e == 1 {
		// Regular sampling: one sample between i and the window at j. The
		// lower median of the window and x is x held between the two
		// window values around the position it takes.
		x := extra[0]
		m := len(w.sorted) / 2
		if m < len(w.sorted) {
			x = min(x, w.sorted[m])
		}
		if m > 0 {
			x = max(x, w.sorted[m-1])
		}
		return x
	}
	if e > maxMergedExtra {
		w.extra = append(append(w.extra[:0], w.sorted...), extra...)
		return medianOf(w.extra)
	}
	// In the merged order each extra value E[q], sorted, sits at
	// lowerBound(E[q]) + q; the values before the median's position that
	// are not extras are the window's first ones.
	ex := append(w.extra[:0], extra...)
	for q := 1; q < e; q++ {
		for k := q; k > 0 && ex[k] < ex[k-1]; k-- {
			ex[k], ex[k-1] = ex[k-1], ex[k]
		}
	}
	w.extra = ex
	m := (len(w.sorted) + e - 1) / 2
	c := 0
	for ; c < e; c++ {
		pos := w.lowerBound(ex[c]) + c
		if pos == m {
			return ex[c]
		}
		if pos > m {
			break
		}
	}
	return w.sorted[m-c]
}

// sideMedians writes to left[i] the median of vals over the samples in
// [t_i - span, t_i) and to right[i] the median over [t_i, t_i + span], with
// the number of samples each holds (a side without samples has count 0 and
// median 0).
//
// One window slides over the samples before each t_j. The samples after
// t_i are those before t_j, for the first j past t_i + span, plus the few
// from i up to where that window begins (one when sampling is regular), so
// right[i] is read from the window at j with those merged in. Each step
// pairs the sample that enters the window with one that leaves it
// (replace); the window holds the same values as adding and removing them
// one at a time.
func sideMedians(times, vals []int64, span int64, left, right []int64, leftN, rightN []int32, w *windowMedian) {
	n := len(times)
	w.reset()
	lo := 0
	next := 0 // first sample whose right side is not written yet
	for j := 0; j < n; j++ {
		entering := j > 0 // vals[j-1] enters the window before t_j
		for lo < j && times[lo] < satSub(times[j], span) {
			if entering {
				w.replace(vals[lo], vals[j-1])
				entering = false
			} else {
				w.remove(vals[lo])
			}
			lo++
		}
		if entering {
			w.add(vals[j-1])
		}
		leftN[j] = int32(j - lo)
		left[j] = 0 // a side without samples has no median
		if j > lo {
			left[j] = w.median()
		}
		// t_j is the first time past t_next + span: the window holds
		// [lo, j) and lo > next.
		for next < j && times[j] > satAdd(times[next], span) {
			rightN[next] = int32(j - next)
			right[next] = w.medianWith(vals[next:lo])
			next++
		}
	}
	if next == n {
		return
	}
	// The samples whose right side reaches the last one: the window grows
	// to the end and then gives up its first samples.
	w.add(vals[n-1])
	for ; next < n; next++ {
		for lo < next {
			w.remove(vals[lo])
			lo++
		}
		rightN[next] = int32(n - next)
		right[next] = w.medianWith(vals[next:lo])
	}
}

// leftMedians writes left and leftN of samples [from, to) as sideMedians
// does: the median of vals over [lo, i), lo the first sample at or after
// t_i - span.
func leftMedians(times, vals []int64, from, to int, span int64, left []int64, leftN []int32, w *windowMedian) {
	if from >= to {
		return
	}
	lo := sort.Search(from, func(k int) bool { return times[k] >= satSub(times[from], span) })
	w.fill(vals[lo:from])
	leftMediansFilled(times, vals, lo, from, to, span, left, leftN, w)
}

// leftMediansFilled is leftMedians with w holding vals[lo:from] already,
// lo the first sample at or after t_from - span.
func leftMediansFilled(times, vals []int64, lo, from, to int, span int64, left []int64, leftN []int32, w *windowMedian) {
	for i := from; i < to; i++ {
		// vals[i-1] enters the window, paired with one that leaves
		// (replace), as in sideMedians.
		entering := i > from
		start := satSub(times[i], span)
		for lo < i && times[lo] < start {
			if entering {
				w.replace(vals[lo], vals[i-1])
				entering = false
			} else {
				w.remove(vals[lo])
			}
			lo++
		}
		if entering {
			w.add(vals[i-1])
		}
		leftN[i] = int32(i - lo)
		left[i] = 0
		if i > lo {
			left[i] = w.median()
		}
	}
}

// rightMedians writes right and rightN of samples [from, to) as
// sideMedians does: the median of vals over [i, hi), hi the first sample
// after t_i + span.
func rightMedians(times, vals []int64, from, to int, span int64, right []int64, rightN []int32, w *windowMedian) {
	if from >= to {
		return
	}
	hi := rightEnd(times, from, span)
	w.fill(vals[from:hi])
	rightMediansFilled(times, vals, from, hi, to, span, right, rightN, w)
}

// rightEnd is the first sample after t_from + span.
func rightEnd(times []int64, from int, span int64) int {
	hi := from
	stop := satAdd(times[from], span)
	for hi < len(times) && times[hi] <= stop {
		hi++
	}
	return hi
}

// rightMediansFilled is rightMedians with w holding vals[from:hi] already,
// hi = rightEnd(times, from, span).
func rightMediansFilled(times, vals []int64, from, hi, to int, span int64, right []int64, rightN []int32, w *windowMedian) {
	for i := from; i < to; i++ {
		// vals[i-1] leaves the window, paired with one that enters.
		leaving := i > from
		stop := satAdd(times[i], span)
		for hi < len(times) && times[hi] <= stop {
			if leaving {
				w.replace(vals[i-1], vals[hi])
				leaving = false
			} else {
				w.add(vals[hi])
			}
			hi++
		}
		if leaving {
			w.remove(vals[i-1])
		}
		rightN[i] = int32(hi - i)
		right[i] = w.median()
	}
}

// robustSigma is madToSigma times the median absolute residual of vals
// around base, never below floor.
func robustSigma(vals, base []int64, floor float64, scratch []int64) float64 {
	if len(vals) == 0 {
		return floor
	}
	return sigmaOf(medianOf(absResiduals(vals, base, scratch)), floor)
}

func sigmaOf(mad int64, floor float64) float64 { return math.Max(floor, madToSigma*float64(mad)) }

// absResiduals writes |vals[i] - base[i]| to scratch.
func absResiduals(vals, base []int64, scratch []int64) []int64 {
	scratch = scratch[:0]
	for i, v := range vals {
		d := v - base[i]
		if d < 0 {
			d = -d
		}
		scratch = append(scratch, d)
	}
	return scratch
}

// medianOf is the lower median of a (reordered in place); a is not empty.
func medianOf(a []int64) int64 { return selectKth(a, (len(a)-1)/2) }

// medianNear is medianOf(a) found faster when guess is the median or near
// it (last evaluation's, of data that changed little): one pass counts the
// values below and at guess, and only the side that holds the median, if
// not guess itself, is selected in.
func medianNear(a []int64, guess int64) int64 {
	k := (len(a) - 1) / 2
	below, at := 0, 0
	for _, v := range a {
		if v < guess {
			below++
		} else if v == guess {
			at++
		}
	}
	if k >= below && k < below+at {
		return guess
	}
	w := 0
	if k < below {
		for _, v := range a {
			if v < guess {
				a[w] = v
				w++
			}
		}
		return selectKth(a[:w], k)
	}
	for _, v := range a {
		if v > guess {
			a[w] = v
			w++
		}
	}
	return selectKth(a[:w], k-below-at)
}

// madNear is the median of |vals[i] - base[i]| (vals not empty), found
// without writing the residuals when guess is it.
func madNear(vals, base []int64, guess int64, scratch []int64) int64 {
	base = base[:len(vals)]
	below, at := 0, 0
	for i, v := range vals {
		// Without branches: the residuals lie on both sides of guess
		// about equally often, so a branch would be mispredicted half the
		// time. d - guess cannot overflow (both are >= 0).
		d := v - base[i]
		d = max(d, -d)
		below += int(uint64(d-guess) >> 63)
		x := d ^ guess
		at += int(1 - uint64(x|-x)>>63)
	}
	if k := (len(vals) - 1) / 2; k >= below && k < below+at {
		return guess
	}
	return medianNear(absResiduals(vals, base, scratch), guess)
}

// selectKth is the k-th smallest value of a (reordered in place), 0 <= k < len(a).
func selectKth(a []int64, k int) int64 {
	lo, hi := 0, len(a)-1
	for lo < hi {
		pivot := a[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for a[i] < pivot {
				i++
			}
			for a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return a[k]
		}
	}
	return a[k]
}

// typicalInterval is the median spacing of the sample times (0 with fewer
// than two samples).
func typicalInterval(times []int64, scratch []int64) int64 {
	if len(times) < 2 {
		return 0
	}
	// Most sources sample at a fixed period: every spacing equal is the
	// median without a selection.
	first := times[1] - times[0]
	regular := true
	for i := 2; i < len(times) && regular; i++ {
		regular = times[i]-times[i-1] == first
	}
	if regular {
		return first
	}
	return medianOf(spacings(times, scratch))
}

// spacings writes the differences of consecutive times to scratch.
func spacings(times []int64, scratch []int64) []int64 {
	scratch = scratch[:0]
	for i := 1; i < len(times); i++ {
		scratch = append(scratch, times[i]-times[i-1])
	}
	return scratch
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}

// satMul is a × b, saturated at the int64 range (b >= 0).
func satMul(a, b int64) int64 {
	if b != 0 && a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

func satSub(a, b int64) int64 {
	if b == math.MinInt64 {
		return satAdd(satAdd(a, math.MaxInt64), 1)
	}
	return satAdd(a, -b)
}
