package main

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// rankSet counts each distinct rank once, whether it lands in the bits, in
// the map, or in the map first and the bits once they grow over it.
func TestRankSet(t *testing.T) {
	tests := []struct {
		name  string
		ranks []int64
	}{
		{"empty", nil},
		{"dense repeated", []int64{0, 1, 2, 1, 0, 63, 64, 64, 2047}},
		{"negative and huge", []int64{-1, -1, math.MinInt64, math.MaxInt64, 3, math.MaxInt64}},
		{"sparse first then covered", []int64{10000, 5000, 0, 1, 2, 3, 4, 5, 6, 7, 10000, 5000, 9999}},
		{"bit boundaries", []int64{63, 64, 127, 128, 4095, 4096, 4160}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]int64, 20000)
	for i := range random {
		random[i] = rng.Int64N(30000) - 100
	}
	tests = append(tests, struct {
		name  string
		ranks []int64
	}{"random", random})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s rankSet
			want := map[int64]struct{}{}
			for _, r := range tt.ranks {
				s.add(r)
				want[r] = struct{}{}
				if s.len() != len(want) {
					t.Fatalf("after adding %d: len %d, want %d", r, s.len(), len(want))
				}
			}
			for q := range s.sparse {
				if q >= 0 && q < int64(len(s.bits))*64 {
					t.Errorf("rank %d is in the map and under the bits' length", q)
				}
			}
		})
	}
}

// BenchmarkJobTally is the per-record cost of tallying a job's ranks, by
// ranks: records of the ranks in turn, as a time-ordered file interleaves
// them.
func BenchmarkJobTally(b *testing.B) {
	for _, ranks := range []int{64, 512, 2048} {
		b.Run("ranks="+strconv.Itoa(ranks), func(b *testing.B) {
			events := make([]telemetry.Event, 4096)
			for i := range events {
				events[i] = telemetry.Event{JobID: "job", Rank: int64(i % ranks), TimestampNs: int64(i)}
			}
			t := newJobTally()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				t.add(&events[i%len(events)])
			}
		})
	}
}
