package evidence

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// changesForInChange is n changes of a rank, sorted by riseHi as
// analyzeRank leaves them, and the longest one's span: spikes of one to
// five samples at 2 Hz, a step (its onset sample only) every tenth, and
// one 40 s bounded level (another tenant) that later spikes lie inside.
func changesForInChange(rng *rand.Rand, n int) ([]episode, int64) {
	const interval = 500 * ms
	var eps []episode
	t := int64(t0)
	for i := range n {
		t += interval * int64(2+rng.IntN(20))
		switch {
		case i == n/3:
			eps = append(eps, episode{riseHi: t, fallLo: t + 40*sec})
		case i%10 == 9:
			eps = append(eps, episode{persistent: true, riseHi: t, fallLo: t})
		default:
			eps = append(eps, episode{riseHi: t, fallLo: t + interval*int64(rng.IntN(5))})
		}
	}
	slices.SortFunc(eps, func(a, b episode) int { return int(a.riseHi - b.riseHi) })
	longest := int64(0)
	for _, ep := range eps {
		longest = max(longest, ep.fallLo-ep.riseHi)
	}
	return eps, longest
}

// TestInChangeBoundedByLongest: reading only the changes that began within
// the rank's longest change before t gives what reading every earlier one
// does, inside the long level too.
func TestInChangeBoundedByLongest(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 3))
	eps, longest := changesForInChange(rng, 400)
	everyEarlier := func(t int64) bool {
		for _, ep := range eps {
			if ep.riseHi <= t && ep.fallLo >= t {
				return true
			}
		}
		return false
	}
	in, out := 0, 0
	last := eps[len(eps)-1].fallLo
	for at := int64(t0); at <= last+sec; at += 137 * ms {
		want := everyEarlier(at)
		if got := inChange(eps, longest, at); got != want {
			t.Fatalf("inChange at %d ms: %v, want %v", (at-t0)/ms, got, want)
		}
		if want {
			in++
		} else {
			out++
		}
	}
	if in < 100 || out < 100 {
		t.Fatalf("the times probed fall %d inside changes and %d outside: both must be exercised", in, out)
	}
}

// analyzeRank gives the longest span of its changes, first to last high
// sample, which inChange is bounded by.
func TestAnalyzeRankLongestChange(t *testing.T) {
	j := newSim(4, 100*ms, 60*sec)
	j.worldAllReduces()
	j.collectiveSpike(rankList(0, 4), 10, gib)
	j.change(rankList(0, 4), 30*sec, 32*sec, gib) // 2 s: another tenant's
	in := j.input()
	cfg := mediumConfig(t)
	var sc scratch
	ra := analyzeRank(0, &in.Ranks[0], in.Collectives, &cfg, &sc)
	if len(ra.episodes) == 0 {
		t.Fatal("no change found on rank 0")
	}
	var want int64
	for _, ep := range ra.episodes {
		want = max(want, ep.fallLo-ep.riseHi)
	}
	if want < 1900*ms || ra.longest != want {
		t.Fatalf("longest %d ns, want %d (>0) over %d changes", ra.longest, want, len(ra.episodes))
	}
}

// BenchmarkInChange asks, for a sample in no change (the common case of a
// member sampled flat), whether it lies in one of a rank's n changes: with
// the bound the changes read do not grow with n.
func BenchmarkInChange(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		rng := rand.New(rand.NewPCG(24, uint64(n)))
		eps, longest := changesForInChange(rng, n)
		var probes []int64
		for _, ep := range eps[len(eps)/2:] {
			if !inChange(eps, longest, ep.riseHi-1) {
				probes = append(probes, ep.riseHi-1)
			}
		}
		b.Run(fmt.Sprintf("changes=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				inChange(eps, longest, probes[i%len(probes)])
				i++
			}
		})
	}
}
