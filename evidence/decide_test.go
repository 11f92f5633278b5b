package evidence

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// trainingJob is a job of n ranks with a world all_reduce every second at
// +600 ms lasting 300 ms (seq = the second).
func trainingJob(n int, interval int64) *simJob {
	j := newSim(n, interval, 40*sec)
	return j
}

func (j *simJob) worldAllReduces() {
	for k := int64(0); k < j.duration/sec; k++ {
		j.collective("world", k, "all_reduce", rankList(0, j.ranks), k*sec+600*ms, 300*ms, false)
	}
}

// collectiveSpike lays bytes on ranks from just after the launch of second
// k's all_reduce until its end.
func (j *simJob) collectiveSpike(ranks []int, k, bytes int64) overlay {
	o := overlay{k*sec + 605*ms, k*sec + 920*ms, bytes}
	j.change(ranks, o.start, o.end, bytes)
	return o
}

func withMinConfidence(t *testing.T, minConf float64) Config {
	t.Helper()
	cfg, err := ResolveConfig("medium", map[string]any{"min_confidence": minConf}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func one(t *testing.T, j *simJob, results []attribution.Result, rank int, at int64) attribution.Result {
	t.Helper()
	got := j.resultsAt(results, rank, at)
	if len(got) != 1 {
		t.Fatalf("rank %d at %d ms: %d results, want 1: %+v", rank, at/ms, len(got), got)
	}
	return got[0]
}

func hasCode(r attribution.Result, code string) bool { return slices.Contains(r.ReasonCodes, code) }

func TestSynchronyAmongMembers(t *testing.T) {
	j := trainingJob(8, 100*ms)
	j.worldAllReduces()
	// A two-rank group's collective at 10.2 s; both members spike.
	j.collective("tp0", 0, "all_reduce", []int{2, 5}, 10*sec+200*ms, 300*ms, false)
	j.change([]int{2, 5}, 10*sec+205*ms, 10*sec+520*ms, gib)
	// One rank of the world spikes at second 20's all_reduce.
	j.collectiveSpike([]int{3}, 20, gib)
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)

	for _, rank := range []int{2, 5} {
		r := one(t, j, results, rank, 10*sec+300*ms)
		if r.Classification != attribution.CollectiveLikely || r.Collective == nil ||
			r.Collective.CommID != "tp0" || r.Collective.CommRanks != 2 || r.Collective.SynchronizedCommRanks != 2 {
			t.Errorf("rank %d: %s %+v, want likely on tp0 with 2 of 2 members", rank, r.Classification, r.Collective)
		}
		if !hasCode(r, ReasonMemberSynchrony) {
			t.Errorf("rank %d: codes %v lack %s", rank, r.ReasonCodes, ReasonMemberSynchrony)
		}
	}
	lone := one(t, j, results, 3, 20*sec+700*ms)
	if lone.Classification != attribution.CollectiveSuspect || !hasCode(lone, ReasonInsufficientSynchrony) {
		t.Errorf("single-rank spike at a world collective: %s %v, want suspect with %s",
			lone.Classification, lone.ReasonCodes, ReasonInsufficientSynchrony)
	}
	if len(results) != 3 {
		t.Errorf("%d results, want 3: %+v", len(results), results)
	}
}

func TestSkewDoesNotMatter(t *testing.T) {
	build := func(skew int64) (*simJob, []attribution.Result) {
		j := trainingJob(8, 100*ms)
		for r := 4; r < 8; r++ {
			j.offset[r] = skew
		}
		j.worldAllReduces()
		j.collectiveSpike(rankList(0, 8), 12, gib)
		j.collectiveSpike(rankList(0, 8), 27, gib)
		return j, Attribute(j.input(), mediumConfig(t), nil)
	}
	j0, base := build(0)
	for _, skew := range []int64{-1500 * ms, 2 * sec} {
		j, skewed := build(skew)
		if len(skewed) != len(base) || len(base) != 16 {
			t.Fatalf("skew %d ms: %d results, without skew %d, want 16", skew/ms, len(skewed), len(base))
		}
		for _, k := range []int64{12, 27} {
			for r := 0; r < 8; r++ {
				a := one(t, j0, base, r, k*sec+700*ms)
				b := one(t, j, skewed, r, k*sec+700*ms)
				if a.Classification != b.Classification || b.Collective.SynchronizedCommRanks != 8 {
					t.Errorf("skew %d ms, rank %d, second %d: %s (%d synchronized), without skew %s",
						skew/ms, r, k, b.Classification, b.Collective.SynchronizedCommRanks, a.Classification)
				}
			}
		}
	}
}

func TestStepReportedOnceAtOnset(t *testing.T) {
	j := trainingJob(8, 100*ms)
	j.worldAllReduces()
	// NCCL's lazy buffers: +2 GiB at the first all_gather, at 20.05 s.
	j.collective("world", 1000, "all_gather", rankList(0, 8), 20*sec+50*ms, 40*ms, false)
	j.change(rankList(0, 8), 20*sec+55*ms, -1, 2*gib)
	// Spikes before and after the step are judged against the level of
	// their time.
	j.collectiveSpike(rankList(0, 8), 8, gib)
	j.collectiveSpike(rankList(0, 8), 24, gib)
	j.collectiveSpike(rankList(0, 8), 33, gib)
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := 0; r < 8; r++ {
		var persistent []attribution.Result
		for _, res := range results {
			if res.Rank == int64(r) && res.Kind == attribution.KindPersistent {
				persistent = append(persistent, res)
			}
		}
		if len(persistent) != 1 {
			t.Fatalf("rank %d: %d persistent results, want 1: %+v", r, len(persistent), persistent)
		}
		p := persistent[0]
		onset := t0 + 20*sec + 55*ms
		if p.IntervalStartNs > onset+100*ms || p.IntervalEndNs < uint64(onset) {
			t.Errorf("rank %d: step interval [%d, %d] ms misses the onset", r, (p.IntervalStartNs-t0)/ms, (int64(p.IntervalEndNs)-t0)/ms)
		}
		if p.Classification != attribution.CollectiveConfident || !hasCode(p, ReasonStepAtFirstUse) {
			t.Errorf("rank %d: step %s %v, want confident with %s", r, p.Classification, p.ReasonCodes, ReasonStepAtFirstUse)
		}
		if d := p.ExcessBytes - 2*gib; d < -64<<20 || d > 64<<20 {
			t.Errorf("rank %d: step height %d, want about 2 GiB", r, p.ExcessBytes)
		}
		for _, k := range []int64{8, 24, 33} {
			s := one(t, j, results, r, k*sec+700*ms)
			if s.Kind != attribution.KindTransient || s.ExcessBytes < gib-64<<20 || s.ExcessBytes > gib+64<<20 {
				t.Errorf("rank %d, second %d: %s spike of excess %d, want a transient of about 1 GiB", r, k, s.Kind, s.ExcessBytes)
			}
		}
		if n := countRank(results, r); n != 4 {
			t.Errorf("rank %d: %d results, want 4 (the step once and three spikes)", r, n)
		}
	}
}

func TestStepAtTheJobsFirstCollective(t *testing.T) {
	for _, onset := range []int64{600 * ms, 1050 * ms, 37 * sec} {
		j := trainingJob(4, 100*ms)
		j.collective("world", 0, "all_gather", rankList(0, 4), onset-5*ms, 40*ms, false)
		j.change(rankList(0, 4), onset, -1, gib)
		results := Attribute(j.input(), mediumConfig(t), nil)
		for r := 0; r < 4; r++ {
			p := one(t, j, results, r, onset+50*ms)
			if p.Kind != attribution.KindPersistent || p.Classification != attribution.CollectiveConfident {
				t.Errorf("onset %d ms, rank %d: %s %s, want a confident persistent step", onset/ms, r, p.Kind, p.Classification)
			}
			if n := countRank(results, r); n != 1 {
				t.Errorf("onset %d ms, rank %d: %d results, want 1", onset/ms, r, n)
			}
		}
	}
}

func countRank(results []attribution.Result, rank int) int {
	n := 0
	for _, r := range results {
		if r.Rank == int64(rank) {
			n++
		}
	}
	return n
}

func TestSizeFloorAndChurn(t *testing.T) {
	j := trainingJob(8, 100*ms)
	j.worldAllReduces()
	// 2 MiB blips on every rank at every fifth collective, and a single
	// 2 MiB page flickering on and off: a flat baseline's MAD is 0.
	for k := int64(2); k < 38; k += 5 {
		j.collectiveSpike(rankList(0, 8), k, 2<<20)
	}
	for tt := int64(0); tt < 40*sec; tt += 700 * ms {
		j.change([]int{1, 6}, tt, tt+100*ms, 2<<20)
	}
	if results := Attribute(j.input(), withMinConfidence(t, 0), nil); len(results) != 0 {
		t.Errorf("page-sized blips gave %d results, want none: %+v", len(results), results[0])
	}
	// No size floor on what every member shows at its marker of one
	// collective (evidence-mode §7.2): a synchronous 24 MiB change is found
	// like a 48 MiB one. Alone, 24 MiB stays under the medium floor (32 MiB)
	// and gives nothing, not even a suspect.
	j.collectiveSpike(rankList(0, 8), 20, 24<<20)
	j.collectiveSpike(rankList(0, 8), 30, 48<<20)
	j.change([]int{3}, 35*sec, 35*sec+300*ms, 24<<20)
	results := Attribute(j.input(), mediumConfig(t), nil)
	if len(results) != 16 || len(j.resultsAt(results, 0, 30*sec+700*ms)) != 1 || len(j.resultsAt(results, 0, 20*sec+700*ms)) != 1 {
		t.Errorf("24 and 48 MiB synchronous spikes: %d results, want 16, one per rank at each", len(results))
	}
	if got := j.resultsAt(Attribute(j.input(), withMinConfidence(t, 0), nil), 3, 35*sec+100*ms); len(got) != 0 {
		t.Errorf("a lone 24 MiB change gave %+v, want nothing", got)
	}
}

func TestSpikeWithinNoiseCorroboratedByMembers(t *testing.T) {
	j := trainingJob(8, 50*ms)
	j.noise = 30 << 20
	j.worldAllReduces()
	// 3.3 spreads: within one rank's noise (medium asks 5 alone), clear
	// when every member shows it at the collective.
	for _, k := range []int64{6, 14, 22, 30} {
		j.collectiveSpike(rankList(0, 8), k, 100<<20)
	}
	j.collectiveSpike([]int{5}, 35, 100<<20)
	results := Attribute(j.input(), mediumConfig(t), nil)
	found := 0
	for _, k := range []int64{6, 14, 22, 30} {
		for r := 0; r < 8; r++ {
			for _, res := range j.resultsAt(results, r, k*sec+700*ms) {
				if res.Classification == attribution.CollectiveLikely {
					found++
					break
				}
			}
		}
	}
	if found < 30 {
		t.Errorf("found %d of 32 rank-spikes within the noise, want at least 30", found)
	}
	// A spike in noise may come as two runs; any result away from the
	// spikes is a false one.
	away := 0
	for _, res := range results {
		atSpike := slices.ContainsFunc([]int64{6, 14, 22, 30}, func(k int64) bool {
			return res.IntervalStartNs <= t0+k*sec+1100*ms && res.IntervalEndNs >= uint64(t0+k*sec+500*ms)
		})
		if !atSpike && res.Classification != attribution.CollectiveSuspect {
			away++
			t.Logf("claim away from the spikes: rank %d at %d ms, %s %v, %d of 8 synchronized",
				res.Rank, (res.IntervalStartNs-t0)/ms, res.Classification, res.ReasonCodes, res.Collective.SynchronizedCommRanks)
		}
	}
	if away > 0 {
		t.Errorf("%d claims away from the spikes", away)
	}
	if got := j.resultsAt(results, 5, 35*sec+700*ms); len(got) != 0 && got[0].Classification != attribution.CollectiveSuspect {
		t.Errorf("a lone spike within the noise: %s, want nothing or suspect", got[0].Classification)
	}
}

func TestAccountingConfirmsAndDenies(t *testing.T) {
	j := trainingJob(8, 100*ms)
	j.worldAllReduces()
	caused := j.collectiveSpike(rankList(0, 8), 10, gib)
	j.collectiveSpike(rankList(0, 8), 25, gib) // co-timed, not NCCL's
	j.accounting(rankList(0, 8), "world", 300<<20, []overlay{caused})
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	for r := 0; r < 8; r++ {
		c := one(t, j, results, r, 10*sec+700*ms)
		if c.Classification != attribution.CollectiveConfirmed || c.NCCLAccountedBytes == nil || *c.NCCLAccountedBytes != gib {
			t.Errorf("rank %d: covered spike %s accounted %v, want confirmed with 1 GiB", r, c.Classification, c.NCCLAccountedBytes)
		}
		d := one(t, j, results, r, 25*sec+700*ms)
		if d.Classification != attribution.CollectiveSuspect || d.NCCLAccountedBytes == nil || *d.NCCLAccountedBytes != 0 {
			t.Errorf("rank %d: uncovered co-timed spike %s %v, want suspect with 0 accounted", r, d.Classification, d.ReasonCodes)
		}
		// Where the accounting decided, the spike was not judged without
		// it: the reasons must not say it was.
		for _, x := range []attribution.Result{c, d} {
			if hasCode(x, ReasonCotimedOnly) {
				t.Errorf("rank %d: %s result decided by NCCL's accounting says %s: %v", r, x.Classification, ReasonCotimedOnly, x.ReasonCodes)
			}
		}
	}
}

func TestHonestyWithoutAccounting(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval int64
		end      int64 // spike end after the all_reduce launch
		want     string
		code     string
	}{
		{"10 Hz, co-timed", 100 * ms, 320 * ms, attribution.CollectiveLikely, ReasonCotimedOnly},
		{"100 Hz, rises at launch, falls at end", 10 * ms, 305 * ms, attribution.CollectiveConfident, ReasonResolvedInInterval},
		{"100 Hz, falls well before the end", 10 * ms, 170 * ms, attribution.CollectiveLikely, ReasonCotimedOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := trainingJob(8, tc.interval)
			j.worldAllReduces()
			j.change(rankList(0, 8), 15*sec+602*ms, 15*sec+600*ms+tc.end, gib)
			results := Attribute(j.input(), mediumConfig(t), nil)
			if len(results) != 8 {
				t.Fatalf("%d results, want 8", len(results))
			}
			for _, r := range results {
				if r.Classification != tc.want || !hasCode(r, tc.code) {
					t.Errorf("rank %d: %s %v, want %s with %s", r.Rank, r.Classification, r.ReasonCodes, tc.want, tc.code)
				}
			}
		})
	}
}

func TestApproximateMarkers(t *testing.T) {
	j := trainingJob(8, 100*ms)
	// Approximate markers (the Inspector's default layout): the op ended at
	// or before the marker's end, by up to the dump interval. The spike
	// rises 300 ms before the marker's start: the record was written late.
	for k := int64(0); k < 40; k++ {
		j.collective("world", k, "all_reduce", rankList(0, 8), k*sec+400*ms, 100*ms, true)
	}
	j.change(rankList(0, 8), 12*sec+100*ms, 12*sec+400*ms, gib)
	// A spike rising 300 ms after an approximate marker's end cannot come
	// from its op, and no other marker is near it.
	j.change(rankList(0, 8), 30*sec+800*ms, 31*sec+100*ms, gib)
	j.collective("world", 1000, "all_gather", rankList(0, 8), 20*sec+50*ms, 40*ms, true)
	j.change(rankList(0, 8), 20*sec+55*ms, -1, 2*gib)
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := 0; r < 8; r++ {
		s := one(t, j, results, r, 12*sec+200*ms)
		if s.Classification != attribution.CollectiveLikely || s.Collective == nil || s.Collective.Seq != 12 {
			t.Errorf("rank %d: spike before an approximate marker %s %+v, want likely on seq 12", r, s.Classification, s.Collective)
		}
		if after := j.resultsAt(results, r, 30*sec+900*ms); len(after) != 0 && after[0].Collective != nil {
			t.Errorf("rank %d: spike after an approximate marker's end matched %+v", r, after[0].Collective)
		}
		p := one(t, j, results, r, 20*sec+100*ms)
		if p.Classification != attribution.CollectiveLikely || !hasCode(p, ReasonApproximateTiming) {
			t.Errorf("rank %d: step at an approximate first use %s %v, want likely with %s", r, p.Classification, p.ReasonCodes, ReasonApproximateTiming)
		}
	}
}

// One collective instance makes one rise per member: allocator churn within
// a rank's noise shortly before the collective (inside an approximate
// marker's tolerance) is not corroborated by the members' spike, which
// corroborates that rank's own spike at the collective.
func TestWeakChangeCorroboratedOnlyAsTheMembersRise(t *testing.T) {
	j := trainingJob(8, 50*ms)
	j.noise = 30 << 20
	for k := int64(0); k < j.duration/sec; k++ {
		j.collective("world", k, "all_reduce", rankList(0, 8), k*sec+600*ms, 300*ms, true)
	}
	var churn []int64
	for _, k := range []int64{6, 14, 22, 30} {
		j.collectiveSpike(rankList(0, 8), k, gib)
		j.change([]int{3}, k*sec+250*ms, k*sec+450*ms, 100<<20)
		churn = append(churn, k*sec+300*ms)
	}
	results := Attribute(j.input(), mediumConfig(t), nil)
	for _, at := range churn {
		for _, res := range j.resultsAt(results, 3, at) {
			if res.Classification != attribution.CollectiveSuspect && res.IntervalEndNs < uint64(t0+at+300*ms) {
				t.Errorf("churn at %d ms claimed: %s %v", (at)/ms, res.Classification, res.ReasonCodes)
			}
		}
		for r := 0; r < 8; r++ {
			if got := j.resultsAt(results, r, at+400*ms); len(got) == 0 || got[0].Classification != attribution.CollectiveLikely {
				t.Errorf("rank %d: the collective spike after %d ms: %+v, want likely", r, at/ms, got)
			}
		}
	}
}

// roundTo's powers of 10 are math.Pow's.
func TestPowersOf10(t *testing.T) {
	for d, p := range powersOf10 {
		if want := math.Pow(10, float64(d)); p != want {
			t.Errorf("10^%d: %v, math.Pow says %v", d, p, want)
		}
	}
}

// sortCodesInto orders reason codes as slices.Sort does.
func TestSortCodes(t *testing.T) {
	all := []string{ReasonPersistentStep, ReasonExcessOverBaseline, ReasonCollectiveMarker, ReasonMemberSynchrony,
		ReasonCotimedOnly, ReasonCoarseSampling, ReasonAccountingCovers, ReasonDeviceWideMemory, ReasonNewProcess,
		ReasonBaselineCreep, ReasonAccountingUnsampled}
	for n := range len(all) + 1 {
		for shift := range len(all) {
			codes := make([]string, 0, n)
			for i := range n {
				codes = append(codes, all[(i*7+shift)%len(all)])
			}
			if n > 2 {
				codes[n-1] = codes[0] // a repeated code
			}
			want := slices.Clone(codes)
			slices.Sort(want)
			got := make([]string, len(codes))
			if sortCodesInto(got, codes); !slices.Equal(got, want) {
				t.Errorf("%v, want %v", got, want)
			}
		}
	}
}

// sortCodesInto orders any codes as slices.Sort does: random draws of every
// reason code and of strings shorter than, equal to and sharing the eight
// bytes it tells codes apart by, up to more codes than a result carries.
func TestSortCodesByPrefix(t *testing.T) {
	pool := append(slices.Clone(AllReasonCodes), "", "a", "ab", "nccl_ac", "nccl_acc", "nccl_acc\x00", "nccl_accz", "nccl_acca", "z")
	r := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		codes := make([]string, r.IntN(maxReasonCodes+3))
		for i := range codes {
			codes[i] = pool[r.IntN(len(pool))]
		}
		want := slices.Clone(codes)
		slices.Sort(want)
		got := make([]string, len(codes))
		if sortCodesInto(got, codes); !slices.Equal(got, want) {
			t.Fatalf("%q, want %q", got, want)
		}
	}
}
