package attribution

import (
	"math"
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

// statsScratch holds reusable buffers for computeRankStats.
type statsScratch struct {
	work []float64
	keys []uint64
}

func newStatsScratch(n int) *statsScratch {
	return &statsScratch{work: make([]float64, n), keys: make([]uint64, n)}
}

// computeRankStats fills the statistics of values (the gaps as float64 in
// sample order; all >= 0).
func computeRankStats(values []float64, sc *statsScratch) rankStats {
	st := rankStats{n: len(values)}
	if st.n < 3 {
		return st
	}
	st.med = median(values, sc.keys)
	work := sc.work[:len(values)]
	for i, v := range values {
		work[i] = math.Abs(v - st.med)
	}
	st.mad = median(work, sc.keys)
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

// median is numpy's median of a (non-negative values, left unchanged): the
// middle element for odd n, (a+b)/2 of the two middle elements for even n.
// keys is scratch of at least len(a).
func median(a []float64, keys []uint64) float64 {
	n := len(a)
	k := n / 2
	hi := selectKth(a, k, keys)
	if n%2 == 1 {
		return hi
	}
	// The lower middle is hi itself unless exactly k values lie below hi,
	// in which case it is the largest of them.
	below, lo := 0, 0.0
	for _, v := range a {
		if v < hi {
			below++
			lo = max(lo, v)
		}
	}
	if below < k {
		lo = hi
	}
	return (lo + hi) / 2
}

// selectKth returns the k-th smallest (0-based) of the non-negative values
// in a, which it does not modify. It is a radix select on the IEEE bits
// (monotonic for non-negative floats): one histogram pass per byte, keeping
// only the candidates of the chosen bucket. Unlike comparison-based
// selection it has no data-dependent branches to mispredict, which is what
// dominates on real, unordered gap series; the cost is O(8n) at worst.
func selectKth(a []float64, k int, keys []uint64) float64 {
	keys = keys[:len(a)]
	for i, v := range a {
		keys[i] = math.Float64bits(v)
	}
	n := len(keys)
	for shift := 56; shift >= 0 && n > 1; shift -= 8 {
		var hist [256]int32
		for _, x := range keys[:n] {
			hist[(x>>shift)&0xff]++
		}
		d := 0
		for ; k >= int(hist[d]); d++ {
			k -= int(hist[d])
		}
		if int(hist[d]) == n {
			continue // every candidate shares this byte
		}
		m := 0
		for _, x := range keys[:n] {
			keys[m] = x
			if (x>>shift)&0xff == uint64(d) {
				m++
			}
		}
		n = m
	}
	return math.Float64frombits(keys[0])
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
