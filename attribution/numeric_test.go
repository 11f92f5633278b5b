package attribution

import (
	"math"
	"slices"
	"testing"
)

// TestPyRound checks Python's round(x, n) on the exact binary value with ties
// to even. Expected values follow from the binary expansions: 2.675 is
// 2.67499999999999982236431605997495353221893310546875, 0.0005 is
// 0.000500000000000000010408340855860842566471546888351440429687, 0.125 and
// 0.375 are exact ties.
func TestPyRound(t *testing.T) {
	tests := []struct {
		x    float64
		n    int
		want float64
	}{
		{2.675, 2, 2.67},
		{0.0005, 3, 0.001},
		{0.125, 2, 0.12},
		{0.375, 2, 0.38},
		{0.7996, 3, 0.8},
		{0.5, 0, 0},
		{1.5, 0, 2},
		{3.17542, 4, 3.1754},
		{11 / math.Sqrt(12), 4, 3.1754},
		{1.6e9 / 17179869184, 6, 0.093132},
		{-0.00001, 4, math.Copysign(0, -1)},
		{1e20, 4, 1e20},
	}
	for _, tc := range tests {
		if got := pyRound(tc.x, tc.n); got != tc.want || math.Signbit(got) != math.Signbit(tc.want) {
			t.Errorf("round(%v, %d) = %v, want %v", tc.x, tc.n, got, tc.want)
		}
	}
}

// TestClassificationUsesUnroundedConfidence: 0.7996 is reported as 0.8 but
// classified collective_likely (reference open question 2).
func TestClassificationUsesUnroundedConfidence(t *testing.T) {
	if classify(0.7996) != CollectiveLikely || pyRound(0.7996, 3) != 0.8 || classify(0.8) != CollectiveConfident {
		t.Fatal("classification must use the unrounded confidence")
	}
	if classify(0.5999) != CollectiveSuspect || classify(0.6) != CollectiveLikely {
		t.Fatal("thresholds are inclusive")
	}
}

// TestPairwiseSum checks numpy's pairwise summation on arrays whose results
// are derived by hand (all intermediate values are exact integers or known
// roundings), and which a plain loop gets wrong.
func TestPairwiseSum(t *testing.T) {
	const big = 1 << 53 // adding 1 to 2^53 rounds back to 2^53 (ties to even)
	naive := func(a []float64) float64 {
		s := 0.0
		for _, v := range a {
			s += v
		}
		return s
	}

	// n = 16: lane 0 holds 2^53 and -2^53 (sum 0), lanes 1..7 hold 1+1.
	a := slices.Repeat([]float64{1}, 16)
	a[0], a[8] = big, -big
	if got := pairwiseSum(a); got != 14 {
		t.Errorf("n=16: %v, want 14", got)
	}
	if naive(a) != 7 {
		t.Fatal("the naive loop should lose the ones next to 2^53")
	}

	// n = 136 splits at 64: left = 2^53+56 (lane 0 loses its seven ones),
	// right (72 elements) = -2^53+71, total 127 (exact sum 134, naive 71).
	a = slices.Repeat([]float64{1}, 136)
	a[0], a[64] = big, -big
	if got := pairwiseSum(a); got != 127 {
		t.Errorf("n=136: %v, want 127", got)
	}
	if naive(a) != 71 {
		t.Fatal("naive loop reference value")
	}

	// Below 8 elements it is a plain loop from 0.
	if got := pairwiseSum([]float64{big, 1, 1, 1}); got != big {
		t.Errorf("n=4: %v", got)
	}
	// np.sum([0.1]*10) == 1.0 while Python's sum() gives 0.9999999999999999.
	tenth := slices.Repeat([]float64{0.1}, 10)
	if pairwiseSum(tenth) != 1.0 || naive(tenth) != 0.9999999999999999 {
		t.Errorf("0.1 x 10: pairwise %v, naive %v", pairwiseSum(tenth), naive(tenth))
	}
}

func TestMedianAndZscore(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{5, 5, 5, 5, 1, 9}, 5},
		{[]float64{7}, 7},
	} {
		if got := median(tc.in, make([]uint64, len(tc.in))); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	// selectKth against sorting on many shapes, including long runs of
	// equal values, zeros, huge values and adversarial orders; the input
	// must not change.
	for _, n := range []int{1, 2, 3, 5, 8, 13, 64, 299, 601, 602, 1000, 2999, 3000, 4096} {
		for shape := range 7 {
			a := make([]float64, n)
			for i := range a {
				switch shape {
				case 0:
					a[i] = float64((i * 7919) % 101)
				case 1:
					a[i] = 5
				case 2:
					a[i] = float64(n - i)
				case 3:
					a[i] = float64(i % 3)
				case 4:
					a[i] = float64((i * 2654435761) % 1000003)
				case 5:
					a[i] = float64(int64(i%7) << 50)
				case 6:
					a[i] = float64(i%2) * 0.25
				}
			}
			sorted := slices.Sorted(slices.Values(a))
			orig := slices.Clone(a)
			for _, k := range []int{0, n / 3, n / 2, n - 1} {
				if got := selectKth(a, k, make([]uint64, n)); got != sorted[k] {
					t.Fatalf("n=%d shape=%d k=%d: %v, want %v", n, shape, k, got, sorted[k])
				}
			}
			if !slices.Equal(a, orig) {
				t.Fatal("selectKth modified its input")
			}
			want := sorted[n/2]
			if n%2 == 0 {
				want = (sorted[n/2-1] + sorted[n/2]) / 2
			}
			if got := median(a, make([]uint64, n)); got != want {
				t.Fatalf("n=%d shape=%d: median %v, want %v", n, shape, got, want)
			}
		}
	}
	// Flat baseline with one spike: MAD 0, z = (n-1)/sqrt(n) whatever the size.
	for n, want := range map[int]float64{6: 2.0412, 8: 2.4749, 9: 2.6667, 10: 2.846, 11: 3.0151, 12: 3.1754} {
		g := slices.Repeat([]float64{40e6}, n)
		g[n/2] = 1.6e9
		st := computeRankStats(g, newStatsScratch(n))
		if got := pyRound(st.zscore(1.6e9), 4); got != want {
			t.Errorf("n=%d: z %v, want %v", n, got, want)
		}
	}
	// Constant values: MAD 0 and sd 0 give z 0.
	st := computeRankStats(slices.Repeat([]float64{5e8}, 12), newStatsScratch(12))
	if st.zscore(5e8) != 0 {
		t.Fatal("constant gaps must give z 0")
	}
}

func TestPyDiv(t *testing.T) {
	if pyDiv(1, 3) != 1.0/3 || pyDiv(1_600_000_000, 17_179_869_184) != 1.6e9/17179869184.0 {
		t.Fatal("small quotients")
	}
	// (2^63-1)/(2^53+1): converting both to float64 first gives 2^63/2^53 =
	// 1024; the correctly rounded quotient (Python) is 1023.9999999999999.
	a, b := int64(math.MaxInt64), int64(1<<53+1)
	if got := pyDiv(a, b); got != 1023.9999999999999 {
		t.Fatalf("pyDiv = %v", got)
	}
}

func TestAppendFloat(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{
		{1, "1.0"}, {0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {0.51, "0.51"}, {0.093132, "0.093132"},
		{3.1754, "3.1754"}, {1e-05, "1e-05"}, {0.0001, "0.0001"}, {1.5e-07, "1.5e-07"},
		{1e16, "1e+16"}, {1.5e16, "1.5e+16"}, {1e15, "1000000000000000.0"}, {123.456, "123.456"},
		{0.020000000000000018, "0.020000000000000018"}, {-2.5, "-2.5"}, {1.2345678901234568e+17, "1.2345678901234568e+17"},
	} {
		if got := string(AppendFloat(nil, tc.x)); got != tc.want {
			t.Errorf("AppendFloat(%v) = %s, want %s", tc.x, got, tc.want)
		}
	}
}

// TestScoreArithmetic checks the S8 reference values: all terms at full
// strength sum to exactly 1.0, and the single-rank negative case gives
// 0.020000000000000018.
func TestScoreArithmetic(t *testing.T) {
	c, _ := ResolveConfig("medium", nil)
	full := spike{gap: 1_600_000_000, ratio: 0.1, hasRatio: true, zRounded: 3.1754, markers: []int64{1}, syncCount: 4}
	conf, mask, ok := score(&full, 4, c)
	if !ok || conf != 1.0 || reasonCodeSets[mask][0] != "allocator_device_divergence" {
		t.Fatalf("full strength: %v %v", conf, reasonCodeSets[mask])
	}
	neg := spike{gap: 1_600_000_000, ratio: 0.1, hasRatio: true, zRounded: 3.1754, syncCount: 1}
	conf, _, ok = score(&neg, 2, c)
	if !ok || conf != 0.020000000000000018 {
		t.Fatalf("negative: %v", conf)
	}
}

// TestPyRoundDoesNotAllocate: rounding the values the engine rounds
// (scores, ratios, confidences) allocates nothing, without unsafe.
func TestPyRoundDoesNotAllocate(t *testing.T) {
	var sink float64
	allocs := testing.AllocsPerRun(100, func() {
		sink += pyRound(1234.56789, 4) + pyRound(0.7996, 3) + pyRound(-3.25e9, 6)
	})
	if allocs != 0 {
		t.Errorf("pyRound allocates %v times per call", allocs)
	}
	_ = sink
}

// TestRoundMemo: the memo gives pyRound's value for every argument,
// repeated or not, telling -0 from 0.
func TestRoundMemo(t *testing.T) {
	m := roundMemo{n: 3}
	for _, x := range []float64{0.12345, 0.12345, 0.6789, math.Copysign(0, -1), 0, 0, 2.675, 2.675, 0.12345} {
		got, want := m.round(x), pyRound(x, 3)
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("round(%v) = %v, want %v", x, got, want)
		}
	}
}
