package collectiveattrprocessor

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
)

// plainNewestHidden is the plain account newestHidden must equal: a map of
// each (job, rank)'s newest point past the cap.
type plainNewestHidden map[rankKey]output.HiddenPoint

func (h plainNewestHidden) keep(p output.HiddenPoint, n int) int64 {
	k := rankKey{p.JobID, p.Rank}
	old, ok := h[k]
	if !ok {
		h[k] = p
		return int64(n - 1)
	}
	if old.TimestampNs <= p.TimestampNs {
		h[k] = p
	}
	return int64(n)
}

func (h plainNewestHidden) take() []output.HiddenPoint {
	keys := slices.SortedFunc(maps.Keys(h), func(a, b rankKey) int {
		return cmp.Or(cmp.Compare(a.job, b.job), cmp.Compare(a.rank, b.rank))
	})
	var out []output.HiddenPoint
	for _, k := range keys {
		out = append(out, h[k])
	}
	clear(h)
	return out
}

// TestNewestHiddenEqualsMap settles random points (jobs in turn and
// interleaved, ranks in and out of order, negative ranks and ranks past
// the index, points older and newer than the one kept, runs of several
// points) in ticks, and requires the dropped counts and each tick's
// points of the map account.
func TestNewestHiddenEqualsMap(t *testing.T) {
	jobs := []string{"a", "b", "job-c", ""}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var got newestHidden
		want := plainNewestHidden{}
		prefix := []output.HiddenPoint{{JobID: "under-cap", Rank: 1}}
		for tick := range 6 {
			job := jobs[rng.IntN(len(jobs))]
			for range rng.IntN(200) {
				if rng.IntN(8) == 0 {
					job = jobs[rng.IntN(len(jobs))]
				}
				rank := rng.Int64N(40)
				switch rng.IntN(12) {
				case 0:
					rank = -1 - rng.Int64N(3)
				case 1:
					rank = output.MaxIndexedRank - 1 + rng.Int64N(3)
				}
				p := output.HiddenPoint{JobID: job, Rank: rank, TimestampNs: rng.Int64N(50), Bytes: rng.Int64N(1 << 20)}
				n := 1 + rng.IntN(4)
				if d1, d2 := got.keep(p, n), want.keep(p, n); d1 != d2 {
					t.Fatalf("seed %d tick %d: %+v × %d: dropped %d, want %d", seed, tick, p, n, d1, d2)
				}
			}
			gotPoints := got.take(slices.Clone(prefix))
			wantPoints := append(slices.Clone(prefix), want.take()...)
			if !slices.Equal(gotPoints, wantPoints) {
				t.Fatalf("seed %d tick %d: points\n%+v\nwant\n%+v", seed, tick, gotPoints, wantPoints)
			}
		}
	}
}

// BenchmarkNewestHiddenKeep is the cost of settling one sample run past the
// tick's cap (core.go's keepNewestHidden), by ranks of one job, with a
// second job's runs interleaved every `other` runs (0: none), and a take
// every 16 rounds of the ranks.
func BenchmarkNewestHiddenKeep(b *testing.B) {
	for _, ranks := range []int64{64, 1024, 16384} {
		for _, other := range []int64{0, 8} {
			b.Run(fmt.Sprintf("ranks=%d/other=%d", ranks, other), func(b *testing.B) {
				var h newestHidden
				var dst []output.HiddenPoint
				b.ReportAllocs()
				var i int64
				for b.Loop() {
					job := "job-1"
					if other > 0 && i%other == 0 {
						job = "job-2"
					}
					h.keep(output.HiddenPoint{JobID: job, Rank: i % ranks, TimestampNs: i, Bytes: i}, 10)
					i++
					if i%(16*ranks) == 0 {
						dst = h.take(dst[:0])
					}
				}
			})
		}
	}
}
