package attribution

import (
	"math"
	"sort"
)

// sortedRankStats is computeRankStats read from the rank's gaps already
// sorted (clamped at 0, ascending), without a pass over them: the median
// is the middle of sorted, and the MAD, the median of |x − median|, is
// found among the two sorted runs of deviations either side of the
// median. Both are the same order statistics of the same values
// computeRankStats selects, so they have the same bits. When the MAD is 0
// the z-score needs the mean and standard deviation, numpy's pairwise sums
// in sample order, which sorted does not give: ok is false and the caller
// computes the statistics from the samples.
func sortedRankStats(sorted []int64) (st rankStats, ok bool) {
	n := len(sorted)
	st.n = n
	if n < 3 {
		return st, true
	}
	at := func(i int) float64 { return float64(sorted[i]) }
	k := n / 2
	st.med = at(k)
	if n%2 == 0 {
		st.med = (at(k-1) + st.med) / 2
	}
	devs := sortedDeviations{sorted: sorted, med: st.med}
	// The values below the median, read from the median down, have
	// deviations med − x ascending (x − med is the same number negated:
	// IEEE subtraction rounds symmetrically, so |x − med| = med − x); the
	// others, read upwards, x − med ascending.
	devs.below = sort.Search(n, func(i int) bool { return !(at(i) < st.med) })
	st.mad = devs.kth(k)
	if n%2 == 0 {
		st.mad = (devs.kth(k-1) + st.mad) / 2
	}
	return st, st.mad > 0
}

// sortedDeviations are |x − med| of sorted's values as two ascending runs:
// the below values under med (sorted[:below], read backwards) and the
// others (sorted[below:]).
type sortedDeviations struct {
	sorted []int64
	med    float64
	below  int
}

func (d *sortedDeviations) low(j int) float64  { return d.med - float64(d.sorted[d.below-1-j]) }
func (d *sortedDeviations) high(j int) float64 { return float64(d.sorted[d.below+j]) - d.med }

// kth is the k-th smallest deviation (0-based): the larger of the last
// ones taken when the k+1 smallest are taken i from the low run and k+1−i
// from the high run, i found by bisection (the smallest i whose next low
// deviation is not below the high run's last taken one).
func (d *sortedDeviations) kth(k int) float64 {
	nLow, nHigh := d.below, len(d.sorted)-d.below
	take := k + 1
	lo, hi := max(0, take-nHigh), min(take, nLow)
	for lo < hi {
		i := int(uint(lo+hi) >> 1)
		// Taking i low and take−i high is too few low ones when the next
		// low deviation is below the last high one taken.
		if d.low(i) < d.high(take-i-1) {
			lo = i + 1
		} else {
			hi = i
		}
	}
	i := lo
	v := math.Inf(-1)
	if i > 0 {
		v = d.low(i - 1)
	}
	if j := take - i; j > 0 {
		v = max(v, d.high(j-1))
	}
	return v
}

// spikeFloor is the smallest value of sorted whose z-score reaches
// threshold, and false when none does. z-scores do not decrease with the
// value (each step, a subtraction, a product by a positive constant, a
// division by a positive MAD or deviation, rounds monotonically), so a
// sample's z-score reaches threshold exactly when its clamped gap is at
// least the floor: the floor rules out all other samples with one
// comparison each.
func spikeFloor(st *rankStats, sorted []int64, threshold float64) (int64, bool) {
	i := sort.Search(len(sorted), func(i int) bool { return st.zscore(float64(sorted[i])) >= threshold })
	if i == len(sorted) {
		return 0, false
	}
	return sorted[i], true
}
