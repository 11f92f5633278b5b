package evidence

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The step scan judges a sample by its sides alone where the span after it
// ends by the last sample, as delta does: its steps are those of a scan
// that asks delta of every sample.
func TestStepScanEqualsScanByDelta(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var w windowMedian
	steps := 0
	for trial := range 400 {
		n := 20 + r.IntN(400)
		times, vals := make([]int64, n), make([]int64, n)
		level := int64(0)
		for i := range n {
			times[i] = int64(i)*100*ms + r.Int64N(int64(trial%3)*30*ms+1)
			if r.IntN(60) == 0 {
				level += (r.Int64N(5) - 2) * 256 * mibTest
			}
			vals[i] = level + r.Int64N(4)*mibTest
		}
		span := []int64{sec, 2 * sec, 8 * sec}[trial%3]
		left, right := make([]int64, n), make([]int64, n)
		leftN, rightN := make([]int32, n), make([]int32, n)
		sideMedians(times, vals, span, left, right, leftN, rightN, &w)
		minSamples := int64(3 + trial%8)
		scan := func(byDelta bool) []step {
			f := stepScan{times: times, gaps: vals, left: left, right: right, leftN: leftN, rightN: rightN,
				span: span, threshold: 64 * mibTest, minSamples: minSamples}
			if !byDelta {
				f.scan(0, n)
				return f.ups
			}
			for i := 0; i < n; {
				if d := f.delta(i); d < f.threshold && -d < f.threshold {
					i++
				} else {
					i = f.run(i, d)
				}
			}
			return f.ups
		}
		want, got := scan(true), scan(false)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: steps %v, want %v", trial, got, want)
		}
		steps += len(want)
	}
	if steps < 100 {
		t.Fatalf("%d steps: the series are too plain", steps)
	}
}

// A collective's 1 GiB spike that ends as a 2 GiB step begins, with no
// sample between at 10 Hz, is a stair at the middle of the whole step: the
// step is crossed on the stair's own samples (j inside the run), and the
// later stair begins where the run ends, not at j.
func TestStaircaseCrossedOnAMiddleStair(t *testing.T) {
	const gib = int64(1) << 30
	var times, gaps []int64
	for i := range 40 {
		times = append(times, int64(i)*100e6)
		switch {
		case i < 20:
			gaps = append(gaps, int64(i%3)*2<<20)
		case i < 25:
			gaps = append(gaps, gib+int64(i%3)*2<<20)
		default:
			gaps = append(gaps, 2*gib+int64(i%3)*2<<20)
		}
	}
	right := slices.Repeat([]int64{2 * gib}, len(gaps))
	const span, threshold = int64(1e9), int64(64 << 20)
	for j := 21; j < 25; j++ {
		stairs := staircase(times, gaps, right, j, 0, 0, 2*gib, span, threshold)
		require.Len(t, stairs, 2, "crossed at %d", j)
		assert.Equal(t, 20, stairs[0].onset, "crossed at %d", j)
		assert.Equal(t, 24, stairs[0].stairLast, "crossed at %d", j)
		assert.Equal(t, 25, stairs[1].onset, "crossed at %d", j)
		assert.InDelta(t, gib, stairs[1].height, float64(8<<20), "crossed at %d", j)
	}
}
