package attribution

import (
	"math"
	"math/bits"
	"slices"
)

// madConstant is the reference's robust z-score scale: 0.6745·(v−median)/MAD
// (not 1/1.4826).
const madConstant = 0.6745

// rankStats holds what robust_zscore needs about one rank's gap array. The
// reference recomputes the median and MAD for every candidate sample; they
// depend only on the rank's gaps, so computing them once gives the same bits
// in linear instead of quadratic time.
type rankStats struct {
	n    int
	med  float64
	mad  float64
	mean float64 // only when mad == 0
	sd   float64 // only when mad == 0
}

// computeRankStats fills the statistics of values (the gaps as float64 in
// sample order). scratch must have len(values) capacity; it is clobbered.
func computeRankStats(values, scratch []float64) rankStats {
	st := rankStats{n: len(values)}
	if st.n < 3 {
		return st
	}
	work := append(scratch[:0], values...)
	st.med = median(work)
	for i, v := range values {
		work[i] = math.Abs(v - st.med)
	}
	st.mad = median(work)
	if st.mad > 0 {
		return st
	}
	// numpy: mean = sum(x)/n; std(ddof=1) = sqrt(sum((x-mean)**2)/(n-1)),
	// both sums pairwise.
	st.mean = pairwiseSum(values) / float64(st.n)
	for i, v := range values {
		d := v - st.mean
		work[i] = float64(d * d)
	}
	st.sd = math.Sqrt(pairwiseSum(work) / float64(st.n-1))
	return st
}

// zscore is the reference's robust_zscore(values, v) for this rank.
func (st *rankStats) zscore(v float64) float64 {
	if st.n < 3 {
		return 0
	}
	if st.mad > 0 {
		// (0.6745 * (v - med)) / mad, left to right; the conversion keeps
		// the product rounded on its own.
		num := float64(madConstant * (v - st.med))
		return positive(num / st.mad)
	}
	if st.sd > 0 {
		return positive((v - st.mean) / st.sd)
	}
	return 0
}

// positive is Python's max(0.0, x).
func positive(x float64) float64 {
	if x > 0 {
		return x
	}
	return 0
}

// median is numpy's median of a (which it reorders): the middle element for
// odd n, (a+b)/2 of the two middle elements for even n.
func median(a []float64) float64 {
	n := len(a)
	k := n / 2
	hi := selectKth(a, k)
	if n%2 == 1 {
		return hi
	}
	lo := a[0]
	for _, v := range a[1:k] {
		lo = max(lo, v)
	}
	return (lo + hi) / 2
}

// selectKth reorders a so that a[k] is its k-th smallest element with
// everything before it <= and everything after it >=, and returns a[k].
// It is Floyd–Rivest selection: on large ranges a small sample brackets the
// target first, so a rank's 3 000 gaps cost about 1.5 comparisons each
// instead of quickselect's ~3.4. A depth budget falls back to sorting,
// bounding the worst case at O(n log n).
func selectKth(a []float64, k int) float64 {
	budget := 4*bits.Len(uint(len(a))) + 16
	floydRivest(a, 0, len(a)-1, k, &budget)
	return a[k]
}

func floydRivest(a []float64, left, right, k int, budget *int) {
	for right > left {
		if *budget == 0 {
			slices.Sort(a[left : right+1])
			return
		}
		*budget--
		if right-left > 600 {
			n := float64(right - left + 1)
			i := float64(k - left + 1)
			z := math.Log(n)
			sz := 0.5 * math.Exp(2*z/3)
			sd := 0.5 * math.Sqrt(z*sz*(n-sz)/n)
			if i < n/2 {
				sd = -sd
			}
			newLeft := max(left, int(float64(k)-i*sz/n+sd))
			newRight := min(right, int(float64(k)+(n-i)*sz/n+sd))
			floydRivest(a, newLeft, newRight, k, budget)
		}
		t := a[k]
		i, j := left, right
		a[left], a[k] = a[k], a[left]
		if a[right] > t {
			a[right], a[left] = a[left], a[right]
		}
		for i < j {
			a[i], a[j] = a[j], a[i]
			i++
			j--
			for a[i] < t {
				i++
			}
			for a[j] > t {
				j--
			}
		}
		if a[left] == t {
			a[left], a[j] = a[j], a[left]
		} else {
			j++
			a[j], a[right] = a[right], a[j]
		}
		if j <= k {
			left = j + 1
		}
		if k <= j {
			right = j - 1
		}
	}
}

// pairwiseSum is numpy's pairwise summation for float64 (np.add.reduce on a
// contiguous array): a plain loop below 8 elements, eight interleaved
// accumulators up to 128, and a split at n/2 rounded down to a multiple of 8
// above. Matching it bit for bit keeps mean and std identical to numpy's.
func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		res := 0.0
		for _, v := range a {
			res += v
		}
		return res
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			b := a[i : i+8 : i+8]
			r[0] += b[0]
			r[1] += b[1]
			r[2] += b[2]
			r[3] += b[3]
			r[4] += b[4]
			r[5] += b[5]
			r[6] += b[6]
			r[7] += b[7]
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += a[i]
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
	}
}
