package evidence

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFirstStartingAtEqualsBinarySearch checks the markers' search against
// slices.BinarySearchFunc over sorted marker lists with repeated starts,
// for times before, at, between, after and at the ends of int64.
func TestFirstStartingAtEqualsBinarySearch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 3000 {
		markers := make([]Marker, r.IntN(40))
		for i := range markers {
			markers[i].StartNs = r.Int64N(50) - 10
			if trial%7 == 0 && i == 0 {
				markers[i].StartNs = math.MinInt64
			}
		}
		slices.SortFunc(markers, func(a, b Marker) int { return cmp.Compare(a.StartNs, b.StartNs) })
		for _, at := range []int64{math.MinInt64, math.MaxInt64, -11, -10, 0, 20, 39, 40, r.Int64N(60) - 15} {
			want, _ := slices.BinarySearchFunc(markers, at, func(mk Marker, t int64) int { return cmp.Compare(mk.StartNs, t) })
			if got := firstStartingAt(markers, at); got != want {
				t.Fatalf("firstStartingAt(%v, %d) = %d, want %d", markers, at, got, want)
			}
		}
	}
}
