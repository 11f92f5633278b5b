package attribution

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortedRankStatsEqualsSelection: the median and MAD read from the
// sorted gaps have the bits of those selected from the samples, and the
// spike floor admits exactly the values whose z-score reaches the
// threshold, on random gaps with many duplicates, zeros, negative gaps
// (clamped), huge values and every small size.
func TestSortedRankStatsEqualsSelection(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	shapes := []func(i int) int64{
		func(int) int64 { return int64(rng.IntN(1 << 30)) },
		func(int) int64 { return int64(rng.IntN(5)) << 20 },      // few distinct values
		func(int) int64 { return int64(rng.IntN(3)) - 1 },        // zeros and negatives
		func(i int) int64 { return int64(i%7)<<20 + 1<<30 },      // the pipeline load's baseline
		func(int) int64 { return int64(rng.Uint64() >> 1) },      // beyond 2^53: conversions round
		func(i int) int64 { return int64(i%2) * 3 },              // two values
		func(int) int64 { return 1<<53 + int64(rng.IntN(4)) },    // distinct ints, equal floats
		func(int) int64 { return int64(rng.ExpFloat64() * 1e8) }, // skewed
	}
	sc := &rankScratch{}
	checked, mad0 := 0, 0
	for round := range 400 {
		n := 1 + round%40
		if round%5 == 0 {
			n = 1 + rng.IntN(3000)
		}
		gaps := make([]int64, n)
		shape := shapes[round%len(shapes)]
		for i := range gaps {
			gaps[i] = shape(i)
			if rng.IntN(50) == 0 {
				gaps[i] = 2<<30 + int64(rng.IntN(1<<20)) // spikes
			}
		}
		want := sc.sampleOrderStats(gaps)
		sorted := make([]int64, n)
		for i, g := range gaps {
			sorted[i] = max(0, g)
		}
		slices.Sort(sorted)
		got, ok := sortedRankStats(sorted)
		if ok != (n < 3 || want.mad > 0) {
			t.Fatalf("round %d (n=%d): ok %v with MAD %v", round, n, ok, want.mad)
		}
		if !ok {
			mad0++
			got = want
		} else if got != want {
			t.Fatalf("round %d (n=%d): sorted stats %+v, selected %+v", round, n, got, want)
		}
		checked++
		for _, threshold := range []float64{0, 1, 2.5, 3, 1e9} {
			floor, any := spikeFloor(&got, sorted, threshold)
			for _, v := range sorted {
				reaches := want.zscore(float64(v)) >= threshold
				if admitted := any && v >= floor; admitted != reaches {
					t.Fatalf("round %d (n=%d), threshold %v: value %d admitted %v, z %v", round, n, threshold, v, admitted, want.zscore(float64(v)))
				}
			}
		}
	}
	if mad0 == 0 || mad0 == checked {
		t.Fatalf("%d of %d rounds had a MAD of 0: both kinds must be checked", mad0, checked)
	}
}
