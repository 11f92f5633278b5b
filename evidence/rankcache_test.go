package evidence

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// rankStream is a rank's samples as a streaming buffer holds them: a
// level with page noise, spikes, steps up and down, now and then a new
// session, sampled every ~100 ms (sometimes jittered).
type rankStream struct {
	r       *rand.Rand
	times   []int64
	vals    []int64
	session []int32
	// nums numbers the samples as a window does: a push or an insert
	// takes the next number, a rewritten sample a new one (it is another
	// sample); they are Sequenced while consecutive.
	nums    []uint64
	nextNum uint64
	level   int64
	sess    int32
	jitter  bool
	// numbered: rankData numbers the samples where they are consecutive.
	numbered bool
	busy     int // steps come busy times as often
	// stairIn counts the samples to the level change by stairBy that
	// follows a step (a staircase or a plateau), when > 0.
	stairIn int
	stairBy int64
}

const mibTest = 1 << 20

func (s *rankStream) next() (int64, int64) {
	ts := int64(0)
	if len(s.times) > 0 {
		step := int64(100_000_000)
		if s.jitter {
			step += s.r.Int64N(20_000_000) - 10_000_000
		}
		ts = s.times[len(s.times)-1] + step
	}
	spike := s.r.IntN(50) == 0
	if s.stairIn > 0 {
		// The second stair of a staircase, or a plateau's fall.
		if s.stairIn--; s.stairIn == 0 {
			s.level += s.stairBy
		}
	}
	switch x := s.r.IntN(1000); {
	case x < 4*s.busy:
		by := int64(1+s.r.IntN(8)) * 64 * mibTest // a step up
		s.level += by
		spike = spike || s.r.IntN(4) == 0 // a spike ending onto the step
		if s.r.IntN(2) == 0 && s.stairIn == 0 {
			s.stairIn = 3 + s.r.IntN(60)
			s.stairBy = []int64{by, -by, by / 2}[s.r.IntN(3)]
		}
	case x < 7*s.busy:
		s.level -= int64(1+s.r.IntN(8)) * 64 * mibTest // a step down
	case x < 7*s.busy+1:
		s.sess++
	}
	v := s.level + int64(s.r.IntN(13))*mibTest
	if spike {
		v += int64(1+s.r.IntN(16)) * 128 * mibTest
	}
	return ts, max(v, 0)
}

func (s *rankStream) push() {
	ts, v := s.next()
	s.times, s.vals, s.session = append(s.times, ts), append(s.vals, v), append(s.session, s.sess)
	s.nums = append(s.nums, s.nextNum)
	s.nextNum++
}

func (s *rankStream) drop(k int) {
	k = min(k, len(s.times))
	s.times, s.vals, s.session = slices.Clone(s.times[k:]), slices.Clone(s.vals[k:]), slices.Clone(s.session[k:])
	s.nums = slices.Clone(s.nums[k:])
}

// change applies one of the changes a window makes between evaluations
// and names it.
func (s *rankStream) change(kind int) string {
	switch kind {
	case 0:
		k := 1 + s.r.IntN(12)
		s.drop(k)
		for range k {
			s.push()
		}
		return "evict and append"
	case 1:
		for range 1 + s.r.IntN(30) {
			s.push()
		}
		return "append"
	case 2:
		s.drop(s.r.IntN(40))
		return "trim front"
	case 3:
		if len(s.times) == 0 {
			s.push()
			return "append"
		}
		i := s.r.IntN(len(s.times))
		ts := s.times[i] - s.r.Int64N(150_000_000)
		j, _ := slices.BinarySearch(s.times, ts+1)
		s.times = slices.Insert(slices.Clone(s.times), j, ts)
		s.vals = slices.Insert(slices.Clone(s.vals), j, s.level)
		s.session = slices.Insert(slices.Clone(s.session), j, s.sess)
		s.nums = slices.Insert(slices.Clone(s.nums), j, s.nextNum)
		s.nextNum++
		return "out of order insert"
	case 4:
		if len(s.vals) > 0 {
			s.vals, s.nums = slices.Clone(s.vals), slices.Clone(s.nums)
			i := s.r.IntN(len(s.vals))
			s.vals[i] += int64(s.r.IntN(3)-1) * 512 * mibTest
			s.nums[i] = s.nextNum
			s.nextNum++
		}
		return "value rewritten"
	case 5:
		s.times, s.vals, s.session, s.nums = nil, nil, nil, nil
		return "emptied"
	default:
		for range 200 {
			s.push()
		}
		return "burst"
	}
}

func (s *rankStream) rankData() RankData {
	rd := RankData{Samples: Samples{TimesNs: s.times, GapBytes: s.vals}}
	if s.numbered && len(s.nums) > 0 && s.nums[len(s.nums)-1]-s.nums[0] == uint64(len(s.nums)-1) &&
		slices.IsSorted(s.nums) {
		rd.Samples.FirstSeq, rd.Samples.Sequenced = s.nums[0], true
	}
	if slices.ContainsFunc(s.session, func(v int32) bool { return v != s.session[0] }) {
		rd.Samples.Session = s.session
		rd.Samples.SessionIDs = make([]string, s.sess+1)
		for i := range rd.Samples.SessionIDs {
			rd.Samples.SessionIDs[i] = fmt.Sprint(i)
		}
	}
	return rd
}

// TestRankCacheEqualsFullAnalysis drives ranks through many evaluations
// with the changes a streaming window makes and checks after every one
// that every intermediate of the cached analysis (interval, span, side
// medians, spreads, steps, cuts, baseline) and the episodes equal those
// computed from scratch.
func TestRankCacheEqualsFullAnalysis(t *testing.T) {
	var withSteps, withSessions, withEpisodes, spikesKept int
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 31))
		s := &rankStream{r: r, level: 4 << 30, jitter: seed%3 == 1, busy: 1 + int(seed%4)*2, numbered: seed%2 == 0}
		cfg := mediumConfig(t)
		var c BaselineCache
		var scC, scF scratch
		for range 300 + r.IntN(2000) {
			s.push()
		}
		for round := range 300 {
			what := s.change(0)
			if r.IntN(5) == 0 {
				what = s.change(r.IntN(7))
			}
			switch r.IntN(40) {
			case 0:
				cfg.Evidence.BaselineWindowNs = []int64{4e9, 8e9, 12e9}[r.IntN(3)]
				what += " + span changed"
			case 1:
				cfg.Evidence.SpreadFloorBytes = []int64{mibTest, 2 * mibTest, 64 * mibTest}[r.IntN(3)]
				what += " + spread floor changed"
			case 2:
				cfg.MinSamplesPerRank = []int64{5, 10, 20}[r.IntN(3)]
				what += " + min samples changed"
			}
			rd := s.rankData()
			if int64(rd.Samples.Len()) < cfg.MinSamplesPerRank || rd.Samples.Len() == 0 {
				continue
			}
			fresh := levelsOf(&rd, &cfg, &scF)
			wantA := analyzeRank(3, &rd, nil, &cfg, &scF)
			// What the decisions read of a change instead of the columns.
			for _, ep := range wantA.episodes {
				if times := rd.Samples.TimesNs; ep.riseHi != times[ep.first] || ep.fallLo != times[ep.last] || ep.gap != rd.Samples.GapBytes[ep.peak] {
					t.Fatalf("seed %d round %d: episode %+v: first at %d, last at %d, peak gap %d", seed, round, ep,
						times[ep.first], times[ep.last], rd.Samples.GapBytes[ep.peak])
				}
			}
			rd.Baseline = &c
			// Every other round the analysis alone uses the cache, as the
			// processor does: its spikes are kept from one analysis to the
			// next only when nothing else synced the cache in between.
			if r.IntN(2) == 0 {
				got := levelsOf(&rd, &cfg, &scC)
				// levels are the cache's: cloned before the second use below.
				got = cloneLevels(got)
				fresh = cloneLevels(fresh)
				if msg := diffLevels(got, fresh); msg != "" {
					t.Fatalf("seed %d round %d after %s (n=%d): %s", seed, round, what, rd.Samples.Len(), msg)
				}
			}
			if len(fresh.steps) > 0 {
				withSteps++
			}
			if rd.Samples.Session != nil {
				withSessions++
			}
			gotA := analyzeRank(3, &rd, nil, &cfg, &scC)
			if c.spikesOK && len(c.spikes) > 0 {
				spikesKept++
			}
			if len(gotA.episodes) == 0 {
				gotA.episodes = nil // the cache's reused memory makes it empty, not nil
			}
			if len(gotA.episodes) > 0 {
				withEpisodes++
			}
			if !reflect.DeepEqual(gotA, wantA) {
				t.Fatalf("seed %d round %d after %s: cached analysis differs\n got %+v\nwant %+v", seed, round, what, gotA, wantA)
			}
		}
	}
	// The streams must exercise what the cache keeps.
	if withSteps < 100 || withSessions < 100 || withEpisodes < 1000 || spikesKept < 500 {
		t.Fatalf("rounds with steps %d, sessions %d, episodes %d, spikes kept from the last round %d: the streams are too plain",
			withSteps, withSessions, withEpisodes, spikesKept)
	}
	t.Logf("rounds with steps %d, sessions %d, episodes %d, spikes kept from the last round %d", withSteps, withSessions, withEpisodes, spikesKept)
}

func cloneLevels(lv rankLevels) rankLevels {
	lv.left, lv.right = slices.Clone(lv.left), slices.Clone(lv.right)
	lv.leftN, lv.rightN = slices.Clone(lv.leftN), slices.Clone(lv.rightN)
	lv.steps, lv.cuts, lv.base = slices.Clone(lv.steps), slices.Clone(lv.cuts), slices.Clone(lv.base)
	return lv
}

func diffLevels(got, want rankLevels) string {
	switch {
	case got.interval != want.interval || got.span != want.span:
		return fmt.Sprintf("interval/span %d/%d, want %d/%d", got.interval, got.span, want.interval, want.span)
	case !slices.Equal(got.left, want.left) || !slices.Equal(got.leftN, want.leftN):
		return "left medians differ"
	case !slices.Equal(got.right, want.right) || !slices.Equal(got.rightN, want.rightN):
		return "right medians differ"
	case got.sigma0 != want.sigma0:
		return fmt.Sprintf("sigma0 %v, want %v", got.sigma0, want.sigma0)
	case !reflect.DeepEqual(got.steps, want.steps) && (len(got.steps) > 0 || len(want.steps) > 0):
		return fmt.Sprintf("steps %+v, want %+v", got.steps, want.steps)
	case !slices.Equal(got.cuts, want.cuts):
		return fmt.Sprintf("cuts %v, want %v", got.cuts, want.cuts)
	case !slices.Equal(got.base, want.base):
		i := 0
		for i < len(got.base) && i < len(want.base) && got.base[i] == want.base[i] {
			i++
		}
		return fmt.Sprintf("baseline differs from sample %d of %d", i, len(want.base))
	case got.sigma != want.sigma:
		return fmt.Sprintf("sigma %v, want %v", got.sigma, want.sigma)
	}
	return ""
}

// BenchmarkAnalyzeRankStreaming is one rank's analysis as a streaming
// window makes it, by samples buffered and new samples per evaluation
// (10 Hz, page-quantized noise, a spike every 100 samples; as many
// samples evicted as added), with the rank's BaselineCache and without
// (everything from scratch).
func BenchmarkAnalyzeRankStreaming(b *testing.B) {
	for _, n := range []int{1500, 3000, 12000} {
		for _, perRound := range []int{10, 100} {
			for _, cached := range []bool{false, true} {
				b.Run(fmt.Sprintf("samples=%d/new=%d/cached=%v", n, perRound, cached), func(b *testing.B) {
					benchAnalyzeRankStreaming(b, n, perRound, cached)
				})
			}
		}
	}
}

func benchAnalyzeRankStreaming(b *testing.B, n, perRound int, cached bool) {
	const step = 100_000_000
	gap := func(i int64) int64 {
		if i%100 == 50 {
			return 2 << 30
		}
		return 100*mibTest + (i*7919%13)*mibTest
	}
	var times, vals []int64
	more := func(k int) {
		for range k {
			i := int64(len(times))
			times, vals = append(times, i*step), append(vals, gap(i))
		}
	}
	more(n)
	cfg := mediumConfig(b)
	var c BaselineCache
	var sc scratch
	rd := RankData{Samples: Samples{TimesNs: times[:n], GapBytes: vals[:n]}}
	if cached {
		rd.Baseline = &c
	}
	analyzeRank(0, &rd, nil, &cfg, &sc)
	from := 0
	b.ReportAllocs()
	for b.Loop() {
		from += perRound
		more(perRound)
		rd.Samples = Samples{TimesNs: times[from : from+n], GapBytes: vals[from : from+n]}
		analyzeRank(0, &rd, nil, &cfg, &sc)
	}
}

// TestMedianNearEqualsSelection checks medianNear and madNear against
// medianOf for guesses at, near, between and far from the median, with
// many ties (page-quantized values) and without.
func TestMedianNearEqualsSelection(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 2000 {
		n := 1 + r.IntN(60)
		spread := []int64{3, 20, 1 << 40}[trial%3]
		vals, base := make([]int64, n), make([]int64, n)
		for i := range vals {
			vals[i], base[i] = r.Int64N(spread)-spread/3, r.Int64N(spread)
		}
		want := medianOf(slices.Clone(vals))
		res := absResiduals(vals, base, nil)
		wantMAD := medianOf(slices.Clone(res))
		for _, guess := range []int64{want, want - 1, want + 1, 0, -spread, 2 * spread, vals[r.IntN(n)]} {
			if got := medianNear(slices.Clone(vals), guess); got != want {
				t.Fatalf("medianNear(%v, %d) = %d, want %d", vals, guess, got, want)
			}
			if got := madNear(vals, base, guess, nil); got != wantMAD {
				t.Fatalf("madNear(%v, %v, %d) = %d, want %d", vals, base, guess, got, wantMAD)
			}
		}
	}
}

// TestOneSidedMediansEqualSideMedians checks leftMedians and rightMedians
// over any stretch against sideMedians over all samples.
func TestOneSidedMediansEqualSideMedians(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var w windowMedian
	for range 500 {
		var times, vals []int64
		for range r.IntN(80) {
			times, vals = appendSample(r, times, vals)
		}
		n := len(times)
		span := int64(100 + r.IntN(900))
		wantL, wantR := make([]int64, n), make([]int64, n)
		wantLN, wantRN := make([]int32, n), make([]int32, n)
		sideMedians(times, vals, span, wantL, wantR, wantLN, wantRN, &w)
		from := r.IntN(n + 1)
		to := from + r.IntN(n-from+1)
		left, right := make([]int64, n), make([]int64, n)
		leftN, rightN := make([]int32, n), make([]int32, n)
		leftMedians(times, vals, from, to, span, left, leftN, &w)
		rightMedians(times, vals, from, to, span, right, rightN, &w)
		if !slices.Equal(left[from:to], wantL[from:to]) || !slices.Equal(leftN[from:to], wantLN[from:to]) {
			t.Fatalf("left [%d, %d) of %v: %v, want %v", from, to, vals, left[from:to], wantL[from:to])
		}
		if !slices.Equal(right[from:to], wantR[from:to]) || !slices.Equal(rightN[from:to], wantRN[from:to]) {
			t.Fatalf("right [%d, %d) of %v: %v, want %v", from, to, vals, right[from:to], wantR[from:to])
		}
	}
}

// TestRankCacheIrregularThenRegular: a late sample breaks a rank's
// regular spacing, then leaves again. The cache compares regular samples
// with their spacing instead of their times, so it must know that the
// samples it holds stopped being regular: with equal values, only the
// samples' counts show the difference.
func TestRankCacheIrregularThenRegular(t *testing.T) {
	cfg := mediumConfig(t)
	var regular, late []int64
	for i := range int64(400) {
		regular = append(regular, i*100_000_000)
	}
	late = slices.Insert(slices.Clone(regular), 201, regular[200]+50_000_000)
	vals := func(n int) []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = 100 * mibTest
		}
		return v
	}
	var c BaselineCache
	var scC, scF scratch
	for round, times := range [][]int64{regular, late, regular, late} {
		rd := RankData{Samples: Samples{TimesNs: times, GapBytes: vals(len(times))}}
		want := cloneLevels(levelsOf(&rd, &cfg, &scF))
		rd.Baseline = &c
		got := cloneLevels(levelsOf(&rd, &cfg, &scC))
		if msg := diffLevels(got, want); msg != "" {
			t.Fatalf("round %d: %s", round, msg)
		}
	}
}
