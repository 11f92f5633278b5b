package window

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOlderFindsTheCut checks older against a count from the front, on
// rings in time order whose times are spread evenly, in bursts, with
// repeats, with one huge gap or at the ends of the int64 range, and that
// wrap around their storage; and on rings out of order.
func TestOlderFindsTheCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	spreads := []func(i int) int64{
		func(int) int64 { return 100_000_000 },                  // 10 Hz
		func(int) int64 { return int64(rng.IntN(3)) },           // repeats
		func(i int) int64 { return int64(1 + (i%50)/49*10000) }, // bursts
		func(int) int64 { return int64(rng.ExpFloat64() * 1e6) },
		func(i int) int64 { // one huge gap
			if i == 7 {
				return math.MaxInt64 / 2
			}
			return 1
		},
	}
	for trial := range 3000 {
		var r timedRing[int64]
		// Start the ring somewhere in its storage, so that it wraps.
		for range rng.IntN(40) {
			r.push(0, 0, 1<<20)
		}
		r.dropFront(r.len())
		n := rng.IntN(300)
		ts := int64(rng.Int64N(1<<40)) - 1<<39
		switch trial % 7 {
		case 5:
			ts = math.MinInt64 + int64(rng.IntN(10))
		case 6:
			ts = math.MaxInt64 - int64(n)*3
		}
		spread := spreads[trial%len(spreads)]
		for i := range n {
			if trial%7 < 5 {
				ts += spread(i)
			} else {
				ts += int64(rng.IntN(3))
			}
			if trial%11 == 10 && rng.IntN(20) == 0 {
				ts -= 5 // out of order
			}
			r.push(ts, 0, 1<<20)
		}
		for range 20 {
			var cutoff int64
			switch k := rng.IntN(5); {
			case n == 0 || k == 0:
				cutoff = rng.Int64() - rng.Int64()
			case k == 1:
				cutoff = r.at(rng.IntN(n))
			default:
				cutoff = r.at(rng.IntN(n)) + int64(rng.IntN(3)) - 1
			}
			want := 0
			for want < r.len() && r.at(want) < cutoff {
				want++
			}
			require.Equal(t, want, r.older(cutoff), "trial %d, cutoff %d", trial, cutoff)
		}
	}
}

// TestOlderReadsFewEntries: on a rank's samples at a steady rate, older
// finds the cut reading a handful of entries, where a binary search over a
// full window would read a dozen, each a cache miss on a cold ring.
func TestOlderReadsFewEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var r timedRing[int64]
	const step = int64(100_000_000)
	for i := range int64(3000) {
		ts := 1_767_225_600_000_000_000 + i*step + rng.Int64N(step/10) // 10 Hz, with jitter
		r.push(ts, 0, 1<<20)
	}
	most := 0
	for range 1000 {
		cutoff := r.at(0) + rng.Int64N(3000*step)
		reads := 0
		got := r.olderBy(cutoff, func(i int) int64 { reads++; return r.at(i) })
		require.True(t, got == r.len() || r.at(got) >= cutoff)
		require.True(t, got == 0 || r.at(got-1) < cutoff)
		most = max(most, reads)
	}
	t.Logf("at most %d entries read", most)
	require.LessOrEqual(t, most, 8)
}
