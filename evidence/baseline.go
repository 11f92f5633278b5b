package evidence

import (
	"math"
	"slices"
)

// madToSigma turns a median absolute deviation into a standard deviation
// for normal noise.
const madToSigma = 1.4826

// windowMedian is a sorted multiset of the values inside a sliding window.
type windowMedian struct {
	sorted []int64
}

func (w *windowMedian) reset() { w.sorted = w.sorted[:0] }

func (w *windowMedian) add(v int64) {
	i, _ := slices.BinarySearch(w.sorted, v)
	w.sorted = slices.Insert(w.sorted, i, v)
}

func (w *windowMedian) remove(v int64) {
	if i, ok := slices.BinarySearch(w.sorted, v); ok {
		w.sorted = slices.Delete(w.sorted, i, i+1)
	}
}

// median is the lower median (the window is never empty when asked).
func (w *windowMedian) median() int64 { return w.sorted[(len(w.sorted)-1)/2] }

// sideMedians writes to left[i] the median of vals over the samples in
// [t_i - span, t_i) and to right[i] the median over [t_i, t_i + span], with
// the number of samples each holds (a side without samples has count 0).
func sideMedians(times, vals []int64, span int64, left, right []int64, leftN, rightN []int32, w *windowMedian) {
	n := len(times)
	w.reset()
	lo := 0
	for i := 0; i < n; i++ {
		if i > 0 {
			w.add(vals[i-1])
		}
		for lo < i && times[lo] < satSub(times[i], span) {
			w.remove(vals[lo])
			lo++
		}
		leftN[i] = int32(i - lo)
		if i > lo {
			left[i] = w.median()
		}
	}
	w.reset()
	hi := 0
	for i := 0; i < n; i++ {
		if i > 0 {
			w.remove(vals[i-1])
		}
		if hi < i {
			hi = i
		}
		for hi < n && times[hi] <= satAdd(times[i], span) {
			w.add(vals[hi])
			hi++
		}
		rightN[i] = int32(hi - i)
		right[i] = w.median()
	}
}

// robustSigma is madToSigma times the median absolute residual of vals
// around base, never below floor.
func robustSigma(vals, base []int64, floor float64, scratch []int64) float64 {
	scratch = scratch[:0]
	for i, v := range vals {
		d := v - base[i]
		if d < 0 {
			d = -d
		}
		scratch = append(scratch, d)
	}
	if len(scratch) == 0 {
		return floor
	}
	return math.Max(floor, madToSigma*float64(medianOf(scratch)))
}

// medianOf is the lower median of a (reordered in place); a is not empty.
func medianOf(a []int64) int64 {
	k := (len(a) - 1) / 2
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
	scratch = scratch[:0]
	for i := 1; i < len(times); i++ {
		scratch = append(scratch, times[i]-times[i-1])
	}
	return medianOf(scratch)
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

func satSub(a, b int64) int64 {
	if b == math.MinInt64 {
		return satAdd(satAdd(a, math.MaxInt64), 1)
	}
	return satAdd(a, -b)
}
