package evidence

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveSideMedians sorts each window anew: the definition sideMedians must
// meet.
func naiveSideMedians(times, vals []int64, span int64) (left, right []int64, leftN, rightN []int32) {
	n := len(times)
	left, right = make([]int64, n), make([]int64, n)
	leftN, rightN = make([]int32, n), make([]int32, n)
	for i := range n {
		var l, r []int64
		for j := range n {
			switch {
			case j < i && times[j] >= times[i]-span:
				l = append(l, vals[j])
			case j >= i && times[j] <= times[i]+span:
				r = append(r, vals[j])
			}
		}
		slices.Sort(l)
		slices.Sort(r)
		leftN[i], rightN[i] = int32(len(l)), int32(len(r))
		if len(l) > 0 {
			left[i] = l[(len(l)-1)/2]
		}
		right[i] = r[(len(r)-1)/2]
	}
	return left, right, leftN, rightN
}

func TestSideMediansMatchEachWindowSorted(t *testing.T) {
	cases := []struct {
		name   string
		levels int64 // distinct values: few gives many ties
		jitter int64 // irregular sampling
		span   int64
		burst  int // samples sharing each time (more than medianWith merges by position)
	}{
		{"ties, regular", 3, 0, 50, 0},
		{"distinct, regular", 1 << 40, 0, 50, 0},
		{"ties, irregular", 4, 9, 35, 0},
		{"distinct, irregular", 1 << 40, 9, 100, 0},
		{"window of one sample", 5, 0, 1, 0},
		{"window wider than the run", 7, 3, 1 << 20, 0},
		{"bursts of one time", 1 << 40, 0, 40, 12},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.span)))
			const n = 400
			times, vals := make([]int64, n), make([]int64, n)
			ts := int64(1000)
			for i := range n {
				if tc.burst == 0 || i%tc.burst == 0 {
					ts += 10
				}
				if tc.jitter > 0 {
					ts += rng.Int64N(tc.jitter)
				}
				times[i] = ts
				vals[i] = rng.Int64N(tc.levels) - tc.levels/2
				if i%37 == 5 { // runs of equal times, as duplicate timestamps give
					times[i] = times[max(0, i-1)]
				}
			}
			wantL, wantR, wantLN, wantRN := naiveSideMedians(times, vals, tc.span)
			left, right := make([]int64, n), make([]int64, n)
			leftN, rightN := make([]int32, n), make([]int32, n)
			var w windowMedian
			sideMedians(times, vals, tc.span, left, right, leftN, rightN, &w)
			for i := range n {
				if leftN[i] != wantLN[i] || rightN[i] != wantRN[i] ||
					(wantLN[i] > 0 && left[i] != wantL[i]) || right[i] != wantR[i] {
					t.Fatalf("sample %d: left %d (n %d) right %d (n %d), want left %d (n %d) right %d (n %d)",
						i, left[i], leftN[i], right[i], rightN[i], wantL[i], wantLN[i], wantR[i], wantRN[i])
				}
			}
		})
	}
}

// BenchmarkSideMedians is one rank's baseline pass: 3 000 samples at 10 Hz
// around a level with noise of 13 distinct values, the 8 s default span.
func BenchmarkSideMedians(b *testing.B) {
	const n = 3000
	times, vals := make([]int64, n), make([]int64, n)
	for i := range int64(n) {
		times[i] = i * 100_000_000
		vals[i] = 100<<20 + (i*7919%13)<<20
	}
	left, right := make([]int64, n), make([]int64, n)
	leftN, rightN := make([]int32, n), make([]int32, n)
	var w windowMedian
	b.ReportAllocs()
	for b.Loop() {
		sideMedians(times, vals, 8_000_000_000, left, right, leftN, rightN, &w)
	}
}
