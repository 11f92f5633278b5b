package evidence

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBaselineCacheEqualsFullComputation changes a rank's samples the ways
// a streaming buffer does, one change per round, and checks after every
// round that the cached side medians are those computed from scratch.
func TestBaselineCacheEqualsFullComputation(t *testing.T) {
	const span = 1000
	changes := []struct {
		name  string
		apply func(r *rand.Rand, times, vals []int64) ([]int64, []int64, int64)
	}{
		{"append", func(r *rand.Rand, times, vals []int64) ([]int64, []int64, int64) {
			for range 1 + r.IntN(12) {
				times, vals = appendSample(r, times, vals)
			}
			return times, vals, span
		}},
		{"evict front and append", func(r *rand.Rand, times, vals []int64) ([]int64, []int64, int64) {
			k := min(len(times), 1+r.IntN(12))
			times, vals = slices.Clone(times[k:]), slices.Clone(vals[k:])
			for range k {
				times, vals = appendSample(r, times, vals)
			}
			return times, vals, span
		}},
		{"trim front only", func(r *rand.Rand, times, vals []int64) ([]int64, []int64, int64) {
			k := min(len(times), r.IntN(30))
			return slices.Clone(times[k:]), slices.Clone(vals[k:]), span
		}},
		{"out of order insert", func(r *rand.Rand, times, vals []int64) ([]int64, []int64, int64) {
			if len(times) == 0 {
				times, vals = appendSample(r, times, vals)
				return times, vals, span
			}
			i := r.IntN(len(times))
			ts := times[i] - r.Int64N(150)
			j, _ := slices.BinarySearch(times, ts+1) // after any equal time: input order
			return slices.Insert(slices.Clone(times), j, ts), slices.Insert(slices.Clone(vals), j, noise(r)), span
		}},
		{"insert before the front", func(r *rand.Rand, times, vals []int64) ([]int64, []int64, int64) {
			ts := int64(0)
			if len(times) > 0 {
				ts = times[0] - 1 - r.Int64N(300)
			}
			return slices.Insert(slices.Clone(times), 0, ts), slices.Insert(slices.Clone(vals), 0, noise(r)), span
		}},
		{"value rewritten", func(r *rand.Rand, times, vals []int64) ([]int64, []int64, int64) {
			if len(vals) == 0 {
				return times, vals, span
			}
			vals = slices.Clone(vals)
			vals[r.IntN(len(vals))] = noise(r)
			return times, vals, span
		}},
		{"span changed", func(r *rand.Rand, times, vals []int64) ([]int64, []int64, int64) {
			return times, vals, span/2 + r.Int64N(span)
		}},
		{"emptied", func(r *rand.Rand, times, vals []int64) ([]int64, []int64, int64) {
			return nil, nil, span
		}},
	}
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 17))
		var c BaselineCache
		var w windowMedian
		var ss sideScratch
		var times, vals []int64
		for range 100 {
			times, vals = appendSample(r, times, vals)
		}
		for round := range 400 {
			// Mostly the streaming case, now and then any other change.
			ch := changes[1]
			if r.IntN(4) == 0 {
				ch = changes[r.IntN(len(changes))]
			}
			var sp int64
			times, vals, sp = ch.apply(r, times, vals)
			c.sync(&Samples{TimesNs: times, GapBytes: vals})
			left, right, leftN, rightN := c.sides(sp, &w, &ss)

			n := len(times)
			wantL, wantR := make([]int64, n), make([]int64, n)
			wantLN, wantRN := make([]int32, n), make([]int32, n)
			var fresh windowMedian
			sideMedians(times, vals, sp, wantL, wantR, wantLN, wantRN, &fresh)
			if !slices.Equal(left, wantL) || !slices.Equal(right, wantR) || !slices.Equal(leftN, wantLN) || !slices.Equal(rightN, wantRN) {
				t.Fatalf("seed %d round %d after %q: cached side medians differ from a full computation\nleft  %v\nwant  %v\nright %v\nwant  %v",
					seed, round, ch.name, left, wantL, right, wantR)
			}
		}
	}
}

// appendSample adds a sample about 100 after the last one, sometimes at the
// same time (ties keep input order).
func appendSample(r *rand.Rand, times, vals []int64) ([]int64, []int64) {
	ts := int64(0)
	if len(times) > 0 {
		ts = times[len(times)-1] + []int64{0, 90, 100, 100, 100, 110, 400}[r.IntN(7)]
	}
	return append(times, ts), append(vals, noise(r))
}

// noise is a level with few distinct values (medians with ties) and
// sometimes a spike.
func noise(r *rand.Rand) int64 {
	if r.IntN(20) == 0 {
		return 1000 + r.Int64N(50)
	}
	return 100 + r.Int64N(8)
}

func BenchmarkBaselineCacheStreaming(b *testing.B) {
	const n, span, step = 3000, 8_000_000_000, 100_000_000
	r := rand.New(rand.NewPCG(1, 2))
	times, vals := make([]int64, n), make([]int64, n)
	for i := range n {
		times[i], vals[i] = int64(i)*step, noise(r)
	}
	var c BaselineCache
	var w windowMedian
	var ss sideScratch
	c.sync(&Samples{TimesNs: times, GapBytes: vals})
	c.sides(span, &w, &ss)
	b.ReportAllocs()
	for b.Loop() {
		last := times[n-1]
		copy(times, times[10:])
		copy(vals, vals[10:])
		for i := n - 10; i < n; i++ {
			last += step
			times[i], vals[i] = last, noise(r)
		}
		c.sync(&Samples{TimesNs: times, GapBytes: vals})
		c.sides(span, &w, &ss)
	}
}
