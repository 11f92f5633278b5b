package window

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
)

// TestSampleRunsFollowEviction: the total and session runs cover the
// samples left after evictions, and a run no sample is in is dropped.
func TestSampleRunsFollowEviction(t *testing.T) {
	var c sampleColumns
	totals := []int64{0, 0, 5, 5, 7, -1, 7, 7}
	for i, total := range totals {
		c.push(int64(i), 1, total, uint32(i/3), 100)
	}
	for k := range len(totals) {
		for i := range c.len() {
			want := max(totals[k+i], 0)
			assert.Equal(t, want, c.totalAt(i), "after %d dropped, sample %d", k, i)
			assert.Equal(t, uint32((k+i)/3), c.sessionAt(i))
		}
		assert.LessOrEqual(t, len(c.sessions), (c.len()+2)/3+1)
		c.dropFront(1)
	}
	assert.Len(t, c.totals, 1)
	assert.Len(t, c.sessions, 1)
}

// TestCutoffSaturates: a window longer than the time since MinInt64 keeps
// everything.
func TestCutoffSaturates(t *testing.T) {
	assert.Equal(t, int64(math.MinInt64), cutoffAt(math.MinInt64+5, time.Minute))
	assert.Equal(t, int64(0), cutoffAt(int64(time.Minute), time.Minute))
}

// TestCopySamplesOfAWrappedRing: a rank whose ring wraps around its
// storage is copied segment by segment, oldest first, with its runs.
func TestCopySamplesOfAWrappedRing(t *testing.T) {
	rb := &Rank{sessions: []string{"s0", "s1"}}
	const maxCap = 64
	for i := range int64(200) {
		if rb.samples.len() == maxCap {
			rb.samples.dropFront(1)
		}
		rb.samples.push(i, 10*i, i/30, uint32(i/100), maxCap)
	}
	require.Equal(t, maxCap, len(rb.samples.ts))
	a, b := rb.samples.segments()
	require.NotZero(t, b[1]-b[0], "the ring wraps")
	require.Equal(t, maxCap, a[1]-a[0]+b[1]-b[0])
	var sc Scratch
	times, gaps, _ := sc.samplesOf(rb, 0)
	for k, ts := range times {
		i := int64(200-maxCap) + int64(k)
		require.Equal(t, i, ts)
		require.Equal(t, 10*i, gaps[k])
		require.Equal(t, i/30, runValue(sc.totals, k))
		require.Equal(t, []string{"s0", "s1"}[i/100], runString(sc.sessions, k))
	}
	require.Len(t, times, maxCap)
}

// TestReplicaFollowsTheRing: round after round of pushes, trims and
// evictions (the ring wrapping and growing), a snapshot's samples are the
// ring's inside the window with their runs, whether or not room was
// reserved between rounds, and each snapshot copies only the samples
// pushed since the previous one.
func TestReplicaFollowsTheRing(t *testing.T) {
	for _, reserve := range []bool{true, false} {
		rb := &Rank{sessions: []string{"s0", "s1", "s2"}}
		const maxCap = 700
		var sc Scratch
		next := int64(0)
		for round := range 60 {
			pushed := 0
			for range 7 + (round*13)%90 {
				if rb.samples.len() == maxCap {
					rb.samples.dropFront(1)
				}
				rb.samples.push(next, 3*next, next/41, uint32(next/1500), maxCap)
				next++
				pushed++
			}
			if round%5 == 4 {
				rb.samples.dropFront(rb.samples.older(next - 300))
			}
			cutoff := next - 400
			times, gaps, _ := sc.samplesOf(rb, cutoff)
			if round > 0 {
				require.Equal(t, pushed, rb.replica.added, "round %d copies what was pushed since the last", round)
			}
			var want []int64
			for i := range rb.samples.len() {
				if ts := rb.samples.at(i); ts >= cutoff {
					want = append(want, ts)
				}
			}
			require.Equal(t, want, times, "round %d", round)
			for k, ts := range times {
				require.Equal(t, 3*ts, gaps[k])
				require.Equal(t, ts/41, runValue(sc.totals, k), "round %d, sample %d", round, k)
				require.Equal(t, []string{"s0", "s1", "s2"}[ts/1500], runString(sc.sessions, k))
			}
			sc.totals, sc.sessions = sc.totals[:0], sc.sessions[:0]
			if reserve {
				sc.ReserveReplicas()
			}
		}
	}
}

// TestReplicaSyncCopiesOnlyWhatArrived: with room reserved after each
// round, a steady job's rounds append to the replica in place (no sync
// copies the window again), and its arrays stay within a quarter of the
// window plus a few rounds.
func TestReplicaSyncCopiesOnlyWhatArrived(t *testing.T) {
	const window, round = 3000, 100
	rb := &Rank{sessions: []string{"s"}}
	var sc Scratch
	next := int64(0)
	push := func(n int) {
		for range n {
			if rb.samples.len() == window {
				rb.samples.dropFront(1)
			}
			rb.samples.push(next, next, 0, 0, window)
			next++
		}
	}
	push(window)
	sc.samplesOf(rb, 0)
	sc.ReserveReplicas()
	for r := range 100 {
		push(round)
		before := &rb.replica.ts[:1][0]
		times, _, _ := sc.samplesOf(rb, 0)
		require.Len(t, times, window)
		require.Equal(t, next-1, times[window-1])
		require.Same(t, before, &rb.replica.ts[:1][0], "round %d: the sync appended in place", r)
		require.Equal(t, round, rb.replica.added)
		sc.ReserveReplicas()
		require.LessOrEqual(t, cap(rb.replica.ts), 2*(window+window/4), "round %d", r)
	}
}

func runValue(runs []attribution.Int64Run, i int) int64 {
	v := int64(0)
	for _, r := range runs {
		if r.From <= i {
			v = r.Value
		}
	}
	return v
}

func runString(runs []attribution.StringRun, i int) string {
	v := ""
	for _, r := range runs {
		if r.From <= i {
			v = r.Value
		}
	}
	return v
}

// TestReplicaSortedGapsFollowTheRing: round after round of pushes, trims,
// evictions and cutoffs, with or without room reserved between rounds and
// with rounds that take a snapshot but no sorted gaps (as evidence mode's
// engine does), the sorted gaps are exactly the snapshot's gaps clamped at
// 0 and sorted, on gaps with many duplicates and negative values; the
// steady rounds update the sorted copy instead of sorting it anew.
func TestReplicaSortedGapsFollowTheRing(t *testing.T) {
	for _, reserve := range []bool{true, false} {
		rng := rand.New(rand.NewPCG(23, 5))
		rb := &Rank{sessions: []string{"s0"}}
		const maxCap = 700
		var (
			sc          Scratch
			tmp         gapBatches
			next        int64
			incremental int
		)
		for round := range 200 {
			for range 3 + rng.IntN(60) {
				if rb.samples.len() == maxCap {
					rb.samples.dropFront(1)
				}
				gap := int64(rng.IntN(9)-2) << 20
				if rng.IntN(30) == 0 {
					gap = 1<<31 + int64(rng.IntN(4))
				}
				rb.samples.push(next, gap, 0, 0, maxCap)
				next++
			}
			switch {
			case round%37 == 36:
				rb.samples.dropFront(rb.samples.len()) // the rank's samples all gone
			case round%5 == 4:
				rb.samples.dropFront(rb.samples.older(next - 300))
			}
			times, gaps, read := sc.samplesOf(rb, next-400+int64(rng.IntN(50)))
			if len(times) > 0 && round%7 != 3 {
				require.Same(t, rb.replica, read.rep)
				tmp = gapBatches{} // the update, and only it, fills them
				got := rb.replica.sortGaps(read.from, read.to, &tmp)
				if len(tmp.left)+len(tmp.came) > 0 {
					incremental++
				}
				want := make([]int64, len(gaps))
				for i, g := range gaps {
					want[i] = max(0, g)
				}
				slices.Sort(want)
				require.Equal(t, want, got, "round %d", round)
			}
			sc.totals, sc.sessions = sc.totals[:0], sc.sessions[:0]
			if reserve {
				sc.ReserveReplicas()
			}
		}
		require.Greater(t, incremental, 100, "reserve %v: the steady rounds update the sorted copy", reserve)
	}
}

// TestRemoveAndMergeSorted: taking values out of and merging values into
// a sorted slice give the sorted multiset; a value not there is reported.
func TestRemoveAndMergeSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 6))
	for range 500 {
		var s []int64
		for range rng.IntN(40) {
			s = append(s, int64(rng.IntN(10)))
		}
		slices.Sort(s)
		var rm, keep []int64
		for _, v := range s {
			if rng.IntN(3) == 0 {
				rm = append(rm, v)
			} else {
				keep = append(keep, v)
			}
		}
		var add []int64
		for range rng.IntN(10) {
			add = append(add, int64(rng.IntN(12)))
		}
		slices.Sort(add)
		got, ok := removeSorted(slices.Clone(s), rm)
		require.True(t, ok)
		require.True(t, slices.Equal(keep, got), "%v without %v: %v", s, rm, got)
		got = mergeSorted(got, add)
		want := slices.Sorted(slices.Values(append(slices.Clone(keep), add...)))
		require.True(t, slices.Equal(want, got), "%v with %v: %v", keep, add, got)
		if len(s) > 0 {
			_, ok = removeSorted(slices.Clone(s), []int64{s[len(s)-1] + 1})
			require.False(t, ok, "a value not in s")
		}
	}
}

// expandRuns writes every value of dst, whatever dst held: 0 before the
// first run, each run's value up to the next.
func TestExpandRunsOverwritesStaleValues(t *testing.T) {
	of := func(r attribution.Int64Run) (int, int64) { return r.From, r.Value }
	for _, tc := range []struct {
		runs []attribution.Int64Run
		want []int64
	}{
		{nil, []int64{0, 0, 0, 0, 0}},
		{[]attribution.Int64Run{{From: 0, Value: 7}}, []int64{7, 7, 7, 7, 7}},
		{[]attribution.Int64Run{{From: 2, Value: 7}, {From: 4, Value: 9}}, []int64{0, 0, 7, 7, 9}},
	} {
		dst := []int64{-1, -1, -1, -1, -1}
		expandRuns(dst, tc.runs, of)
		if !slices.Equal(dst, tc.want) {
			t.Errorf("runs %v: %v, want %v", tc.runs, dst, tc.want)
		}
	}
}

// The samples' totals are their runs' values, over rounds of an
// EvidenceScratch, whether shared (one value throughout) or expanded
// (several runs, more distinct totals than the shared columns hold), and a
// later, longer rank never changes what an earlier one was given.
func TestSamplesOfTotals(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var es EvidenceScratch
	for range 50 {
		var (
			series []attribution.ColumnSeries
			want   [][]int64
		)
		for range 1 + r.IntN(20) {
			n := r.IntN(300)
			cs := attribution.ColumnSeries{TimestampsNs: make([]int64, n), GapBytes: make([]int64, n)}
			w := make([]int64, n)
			switch k := r.IntN(4); {
			case k == 0: // no total known
			case k == 1 && n > 2: // the total changes, or is known from sample 2 on
				from := r.IntN(2)
				cs.Totals = []attribution.Int64Run{{From: from, Value: 80 << 30}, {From: 2, Value: 40 << 30}}
				w[0], w[1] = 80<<30*int64(1-from), 80<<30
				for i := 2; i < n; i++ {
					w[i] = 40 << 30
				}
			default: // one of many device models
				v := int64(1+r.IntN(12)) << 30
				cs.Totals = []attribution.Int64Run{{From: 0, Value: v}}
				for i := range w {
					w[i] = v
				}
			}
			series, want = append(series, cs), append(want, w)
		}
		es.totals, es.sessions = es.totals[:0], es.sessions[:0]
		es.totals = slices.Grow(es.totals, 20*300)
		got := make([][]int64, len(series))
		for i := range series {
			var smp evidence.Samples
			es.expandSeries(&smp, &series[i])
			got[i] = smp.TotalBytes
		}
		for i := range series {
			require.Equal(t, len(want[i]), len(got[i]))
			if len(want[i]) > 0 {
				require.Equal(t, want[i], got[i], "rank %d", i)
			}
		}
	}
	require.LessOrEqual(t, len(es.uniform), maxUniformColumns)
}

// TestPushRunEqualsPushes writes random runs of samples (times in and out
// of order, totals unknown, negative, constant and changing, sessions
// changing between runs, rings emptied, wrapping and growing, runs that
// fill the bound) into one rank's columns by pushRun and into another's by
// a push each, with random drops between them, and requires the same
// columns after every run: storage, order state, runs, sequence numbers.
func TestPushRunEqualsPushes(t *testing.T) {
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 23))
		maxCap := []int{1, 7, 16, 40, 100, 3000}[rng.IntN(6)]
		var byRun, byPush sampleColumns
		ts := rng.Int64N(1000)
		for step := range 60 {
			if k := rng.IntN(byRun.len() + 1); rng.IntN(3) == 0 {
				byRun.dropFront(k)
				byPush.dropFront(k)
			}
			room := maxCap - byRun.len()
			if room <= 0 {
				continue
			}
			n := rng.IntN(min(room, 50)) + 1
			session := uint32(rng.IntN(3))
			from := rng.IntN(3)
			samples := make([][3]int64, from+n)
			for i := range samples {
				ts += rng.Int64N(5)
				if rng.IntN(15) == 0 {
					ts -= rng.Int64N(20)
				}
				total := int64(80 << 30)
				switch rng.IntN(10) {
				case 0:
					total = 0
				case 1:
					total = -rng.Int64N(3)
				case 2:
					total = rng.Int64N(4) << 30
				}
				samples[i] = [3]int64{ts, rng.Int64N(1<<20) - 1<<19, total}
			}
			first, last := byRun.pushRun(from, from+n, session, maxCap, func(i int) (int64, int64, int64) {
				return samples[i][0], samples[i][1], samples[i][2]
			})
			for _, s := range samples[from:] {
				byPush.push(s[0], s[1], s[2], session, maxCap)
			}
			require.Equal(t, samples[from][0], first, "seed %d step %d: first time", seed, step)
			require.Equal(t, samples[len(samples)-1][0], last, "seed %d step %d: last time", seed, step)
			require.Equal(t, byPush, byRun, "seed %d step %d: %d samples from %d, bound %d", seed, step, n, from, maxCap)
		}
	}
}
