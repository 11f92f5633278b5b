package ledger

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGrowthDetector(t *testing.T) {
	// 90 s at 10 Hz of unexplained memory given per time (seconds).
	series := func(f func(s float64) int64) []Row {
		var rows []Row
		for i := range 900 {
			rows = append(rows, Row{TimestampNs: int64(i) * 100 * ms, UnexplainedBytes: f(float64(i) / 10)})
		}
		return rows
	}
	tests := []struct {
		name string
		rows []Row
		ok   bool
		from int64
		to   int64
	}{
		{"flat", series(func(float64) int64 { return 0 }), false, 0, 0},
		{"leak of 8 MiB/s", series(func(s float64) int64 { return int64(s) * 8 * mib }), true, 37 * 8 * mib, 82 * 8 * mib},
		{"too slow", series(func(s float64) int64 { return int64(s) * 2 * mib }), false, 0, 0},
		{"workspace kept from 60 s", series(func(s float64) int64 {
			if s >= 60 {
				return gib
			}
			return 0
		}), true, 0, gib},
		{"spikes every 5 s", series(func(s float64) int64 {
			if int(s)%5 == 0 {
				return 2 * gib
			}
			return 0
		}), false, 0, 0},
		{"rise then fall", series(func(s float64) int64 {
			if s >= 50 && s < 80 {
				return gib
			}
			return 0
		}), false, 0, 0},
		{"too short", series(func(s float64) int64 { return int64(s) * 8 * mib })[:500], false, 0, 0},
	}
	var g GrowthDetector
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.rows {
				g.Add(&tc.rows[i])
			}
			got, ok := g.Detect()
			assert.Equal(t, tc.ok, ok)
			if ok {
				assert.Equal(t, Growth{StartNs: 299 * 100 * ms, EndNs: 899 * 100 * ms, FromBytes: tc.from, ToBytes: tc.to}, got)
			}
		})
	}
}

// detectBySorting is Detect as its rule reads: each quarter's median by
// sorting the quarter.
func detectBySorting(times, values []int64) (Growth, bool) {
	n := len(times)
	if n == 0 || times[0] > times[n-1]-GrowthWindowNs {
		return Growth{}, false
	}
	start := times[n-1] - GrowthWindowNs
	from, _ := slices.BinarySearch(times, start)
	var medians [4]int64
	lo := from
	for q := range 4 {
		bound := start + GrowthWindowNs*int64(q+1)/4
		hi := lo
		for hi < n && (times[hi] < bound || q == 3) {
			hi++
		}
		if hi-lo < growthMinRows {
			return Growth{}, false
		}
		quarter := slices.Sorted(slices.Values(values[lo:hi]))
		medians[q] = quarter[(len(quarter)-1)/2]
		if q > 0 && medians[q] < medians[q-1]-growthSlackBytes {
			return Growth{}, false
		}
		lo = hi
	}
	if medians[3]-medians[0] < GrowthMinBytes {
		return Growth{}, false
	}
	return Growth{StartNs: times[from], EndNs: times[n-1], FromBytes: medians[0], ToBytes: medians[3]}, true
}

// TestGrowthDetectorEqualsSorting: on random rows (rises, falls, spikes,
// ties, gaps, sparse quarters) Detect finds what sorting each quarter
// finds.
func TestGrowthDetectorEqualsSorting(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var g GrowthDetector
	found := 0
	for range 3000 {
		n := r.IntN(900)
		step := (20 + r.Int64N(400)) * ms
		slope := r.Int64N(24*mib) - 4*mib // bytes per second
		noise := []int64{0, mib, 64 * mib, 512 * mib}[r.IntN(4)]
		var times, values []int64
		ts := r.Int64N(sec)
		for i := range n {
			ts += r.Int64N(2 * step)
			if r.IntN(50) == 0 {
				ts += r.Int64N(20 * sec) // a gap
			}
			v := slope*ts/sec + r.Int64N(noise+1)
			if r.IntN(30) == 0 {
				v += 2 * gib // a spike
			}
			if i > 0 && r.IntN(10) == 0 {
				v = values[i-1] // a tie
			}
			times, values = append(times, ts), append(values, v)
			g.Add(&Row{TimestampNs: ts, UnexplainedBytes: v})
		}
		want, wantOK := detectBySorting(times, values)
		got, ok := g.Detect()
		require.Equal(t, wantOK, ok)
		require.Equal(t, want, got)
		if ok {
			found++
		}
	}
	require.Greater(t, found, 100, "the random rows hold rises")
}

func TestLowerMedian(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		v := make([]int64, 1+r.IntN(200))
		spread := 1 + r.Int64N(int64(len(v))*2)
		for i := range v {
			v[i] = r.Int64N(spread)
		}
		sorted := slices.Sorted(slices.Values(v))
		require.Equal(t, sorted[(len(v)-1)/2], lowerMedian(v), "%v", sorted)
	}
}

func TestLowerMedianAtLeast(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		v := make([]int64, 1+r.IntN(200))
		spread := 1 + r.Int64N(int64(len(v))*2)
		for i := range v {
			v[i] = r.Int64N(spread)
		}
		median := slices.Sorted(slices.Values(v))[(len(v)-1)/2]
		for _, x := range []int64{median - 1, median, median + 1, r.Int64N(spread + 2)} {
			require.Equal(t, median >= x, lowerMedianAtLeast(v, x), "median %d, x %d", median, x)
		}
	}
}
