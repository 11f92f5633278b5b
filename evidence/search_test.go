package evidence

import (
	"math/rand/v2"
	"sort"
	"testing"
)

// searchFrom finds what sort.Search finds, from any hint, over sorted
// values with repeats.
func TestSearchFromEqualsSortSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 20000 {
		n := r.IntN(70)
		vals := make([]int, n)
		for i := range vals {
			if i > 0 {
				vals[i] = vals[i-1] + r.IntN(3)
			}
		}
		x := r.IntN(2*n+3) - 1
		pred := func(i int) bool { return vals[i] >= x }
		want := sort.Search(n, pred)
		for _, hint := range []int{-1, 0, n / 2, n - 1, n, n + 1, r.IntN(n + 1), want, want - 1, want + 1} {
			if got := searchFrom(n, hint, pred); got != want {
				t.Fatalf("searchFrom(%d, %d) over %v for %d = %d, want %d", n, hint, vals, x, got, want)
			}
		}
	}
}
