package evidence

import (
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// A few pages that both members of a 2-rank communicator show at its first
// use, on exactly flat baselines, are NCCL's step whatever the size floor.
func TestFewPagesAtFirstUse(t *testing.T) {
	j := trainingJob(2, 100*ms)
	j.collective("tp", 0, "all_reduce", []int{0, 1}, 15*sec+600*ms, 40*ms, false)
	for k := int64(1); k < 20; k++ {
		j.collective("tp", k, "all_reduce", []int{0, 1}, (15+k)*sec+600*ms, 40*ms, false)
	}
	j.change([]int{0, 1}, 15*sec+610*ms, -1, 6<<20)
	for _, preset := range []string{"low", "medium", "high"} {
		cfg, err := ResolveConfig(preset, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		results := Attribute(j.input(), cfg, nil)
		if len(results) != 2 {
			t.Fatalf("%s: %d results, want one step per member: %+v", preset, len(results), results)
		}
		for _, r := range results {
			if r.Kind != attribution.KindPersistent || r.Classification != attribution.CollectiveConfident || !hasCode(r, ReasonStepAtFirstUse) {
				t.Errorf("%s: rank %d: %s %s %v, want a confident persistent step at first use", preset, r.Rank, r.Kind, r.Classification, r.ReasonCodes)
			}
		}
	}
}

// Another tenant's GiB for 3 s rising inside a short collective on every
// member is not that collective's; NCCL's accounting covering it would be.
func TestChangeOutlastingItsCollective(t *testing.T) {
	j := trainingJob(8, 100*ms)
	for k := int64(0); k < 400; k++ {
		j.collective("tp", k, "all_reduce", rankList(0, 8), k*100*ms+10*ms, 20*ms, false)
	}
	j.change(rankList(0, 8), 20*sec+15*ms, 23*sec, gib)
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	if len(results) != 8 {
		t.Fatalf("%d results, want one per rank", len(results))
	}
	for _, r := range results {
		if r.Classification != attribution.CollectiveSuspect || !hasCode(r, ReasonOutlastsCollective) {
			t.Errorf("rank %d: %s %v, want suspect, outlasts_collective", r.Rank, r.Classification, r.ReasonCodes)
		}
	}
	j.accounting(rankList(0, 8), "tp", 100<<20, []overlay{{20*sec + 15*ms, 23 * sec, gib}})
	for _, r := range Attribute(j.input(), withMinConfidence(t, 0), nil) {
		if r.Classification != attribution.CollectiveConfirmed || r.Collective == nil || r.Collective.CommID != "tp" {
			t.Errorf("with accounting: rank %d: %s %v %+v, want confirmed, naming the tp collective", r.Rank, r.Classification, r.ReasonCodes, r.Collective)
		}
	}
}

// Two other tenants on one host's GPUs, 4 GiB for 5 s and 3 GiB for 4.5 s
// five seconds apart, so that neither edge of the first holds a baseline
// span and neither is a step; a world all_reduce's 512 MiB 1.8 s before
// the first and 1.2 s after it. Each spike rises from the level right
// around it, not from a baseline whose spans the tenants' seconds fill more
// than half of.
func TestSpikeBesideBoundedLevel(t *testing.T) {
	for _, interval := range []int64{50 * ms, 100 * ms} {
		j := trainingJob(8, interval)
		j.worldAllReduces()
		j.collectiveSpike(rankList(0, 8), 16, 512<<20)
		j.collectiveSpike(rankList(0, 8), 24, 512<<20)
		j.change(rankList(4, 8), 17*sec+960*ms, 22*sec+940*ms, 4*gib)
		j.change(rankList(4, 8), 28*sec+100*ms, 32*sec+600*ms, 3*gib)
		results := Attribute(j.input(), withMinConfidence(t, 0), nil)
		for _, k := range []int64{16, 24} {
			for r := range 8 {
				got := j.resultsAt(results, r, k*sec+700*ms)
				if len(got) != 1 || got[0].Classification == attribution.CollectiveSuspect || got[0].Collective == nil {
					t.Errorf("%d ms samples: rank %d, all_reduce of second %d: %+v, want one claim of it", interval/ms, r, k, got)
				}
			}
		}
		for _, at := range []int64{20*sec + 700*ms, 30*sec + 700*ms} {
			for r := 4; r < 8; r++ {
				for _, got := range j.resultsAt(results, r, at) {
					if got.Classification != attribution.CollectiveSuspect {
						t.Errorf("%d ms samples: rank %d at %d ms, inside a tenant's seconds: %s %v, want no claim", interval/ms, r, at/ms, got.Classification, got.ReasonCodes)
					}
				}
			}
		}
	}
}

// A restarted process (a new session) at another level is a new series:
// no step, and nothing claimed.
func TestNewSessionIsNoStep(t *testing.T) {
	j := trainingJob(4, 100*ms)
	j.worldAllReduces()
	j.change([]int{2}, 20*sec+650*ms, -1, 512<<20)
	in := j.input()
	s := &in.Ranks[2].Samples
	s.SessionIDs = []string{"a", "b"}
	s.Session = make([]int32, s.Len())
	for i, ts := range s.TimesNs {
		if ts >= t0+20*sec+650*ms {
			s.Session[i] = 1
		}
	}
	for _, r := range Attribute(in, withMinConfidence(t, 0), nil) {
		if r.Rank == 2 {
			t.Errorf("rank 2: %s %s %v, want nothing at its new process's level", r.Kind, r.Classification, r.ReasonCodes)
		}
	}
}

// A leak creeping at 4 MiB/s on every rank is no step and no spike, and a
// collective spike on top of it is found.
func TestCreepIsNoStep(t *testing.T) {
	j := trainingJob(8, 100*ms)
	j.worldAllReduces()
	for ts := 5 * sec; ts < 35*sec; ts += 100 * ms {
		j.change(rankList(0, 8), ts, -1, 400<<10)
	}
	j.collectiveSpike(rankList(0, 8), 25, gib)
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	for _, r := range results {
		if len(j.resultsAt([]attribution.Result{r}, int(r.Rank), 25*sec+700*ms)) == 0 {
			t.Errorf("rank %d: %s %s at %d, want nothing off the spike", r.Rank, r.Kind, r.Classification, r.IntervalStartNs-t0)
		}
	}
	if len(results) != 8 {
		t.Errorf("%d results, want the spike on every rank", len(results))
	}
	for _, r := range results {
		if !hasCode(r, ReasonBaselineCreep) {
			t.Errorf("rank %d: %v, want baseline_creep", r.Rank, r.ReasonCodes)
		}
	}
	j = trainingJob(8, 100*ms)
	j.worldAllReduces()
	j.collectiveSpike(rankList(0, 8), 25, gib)
	for _, r := range Attribute(j.input(), withMinConfidence(t, 0), nil) {
		if hasCode(r, ReasonBaselineCreep) {
			t.Errorf("flat baseline: rank %d: %v, want no baseline_creep", r.Rank, r.ReasonCodes)
		}
	}
}

// Ranks polled once a second cannot place a rise within the synchrony
// window: bare markers give no world synchrony from them alone.
func TestCoarseRanksMakeNoWorldSynchrony(t *testing.T) {
	for _, tc := range []struct {
		interval int64
		want     string
	}{{100 * ms, attribution.CollectiveLikely}, {sec, attribution.CollectiveSuspect}} {
		j := newSim(8, tc.interval, 60*sec)
		for k := int64(0); k < 60; k++ {
			for r := range 8 {
				j.markers[r] = append(j.markers[r], Marker{StartNs: k*sec + 600*ms, EndNs: k*sec + 600*ms, Collective: NoCollective})
			}
		}
		j.change(rankList(0, 8), 30*sec+590*ms, 31*sec+900*ms, gib)
		results := Attribute(j.input(), withMinConfidence(t, 0), nil)
		if len(results) != 8 {
			t.Fatalf("interval %d: %d results, want 8", tc.interval, len(results))
		}
		for _, r := range results {
			if r.Classification != tc.want || (tc.interval == sec) != hasCode(r, ReasonCoarseSampling) {
				t.Errorf("interval %d: rank %d: %s %v, want %s", tc.interval, r.Rank, r.Classification, r.ReasonCodes, tc.want)
			}
		}
	}
}

// abortedJob is a 4-rank job whose world communicator holds 256 MiB from
// the start; its 16th all_reduce hangs until the watchdog aborts it at
// 25.6 s, freeing the buffers.
func abortedJob() *simJob {
	j := trainingJob(4, 100*ms)
	for k := int64(0); k < 15; k++ {
		j.collective("world", k, "all_reduce", rankList(0, 4), k*sec+600*ms, 300*ms, false)
	}
	j.collective("world", 15, "all_reduce", rankList(0, 4), 15*sec+600*ms, 10*sec, false)
	j.change(rankList(0, 4), 0, 25*sec+605*ms, 256<<20)
	return j
}

// Survivors hang in an all_reduce until the watchdog aborts the
// communicator, which frees its buffers: a step down at the end of the
// communicator's last op on every member is NCCL's. A step down elsewhere
// is not reported.
func TestCommunicatorReleasedOnAbort(t *testing.T) {
	j := abortedJob()
	j.change([]int{2}, 0, 35*sec, 128<<20)
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	if len(results) != 4 {
		t.Fatalf("%d results, want one release per member: %+v", len(results), results)
	}
	for _, r := range results {
		if r.Kind != attribution.KindPersistent || r.Classification != attribution.CollectiveConfident ||
			!hasCode(r, ReasonCommReleased) || r.ExcessBytes >= 0 || len(j.resultsAt([]attribution.Result{r}, int(r.Rank), 25*sec+650*ms)) == 0 {
			t.Errorf("rank %d: %s %s %d %v, want a confident persistent step down at 25.6 s", r.Rank, r.Kind, r.Classification, r.ExcessBytes, r.ReasonCodes)
		}
	}
}

// Two first-use steps 1.3 s apart (a world communicator's, then a
// group's) are two steps, each found at its onset.
func TestCloseStepsBothFound(t *testing.T) {
	j := trainingJob(4, 50*ms)
	for k := int64(0); k < 21; k++ {
		j.collective("world", k, "all_gather", rankList(0, 4), (19+k)*sec+100*ms, 60*ms, false)
	}
	for k := int64(0); k < 20; k++ {
		j.collective("tp", k, "all_reduce", rankList(0, 4), (20+k)*sec+400*ms, 60*ms, false)
	}
	j.change(rankList(0, 4), 19*sec+110*ms, -1, 12<<20)
	j.change(rankList(0, 4), 20*sec+410*ms, -1, 10<<20)
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	for r := 0; r < 4; r++ {
		for _, at := range []int64{19*sec + 150*ms, 20*sec + 450*ms} {
			if got := j.resultsAt(results, r, at); len(got) != 1 || got[0].Kind != attribution.KindPersistent {
				t.Errorf("rank %d at %d ms: %d results, want one persistent step", r, at/ms, len(got))
			}
		}
	}
}

// The watchdog's abort frees every buffer the communicator's memory manager
// tracked, and the communicator reports no more: a step down at the release
// by its last reported total is NCCL's own figure, confirmed. Where the
// last report differs from the fall by more than a quarter (rank 3's total
// held 1 GiB, its fall is 256 MiB) NCCL's figure does not explain it, and
// the timing's verdict stands.
func TestReleaseConfirmedByLastReport(t *testing.T) {
	j := abortedJob()
	for r := range 4 {
		total := int64(256 << 20)
		if r == 3 {
			total = gib
		}
		j.acct[r] = map[string][]acctPoint{}
		for at := int64(0); at < 25*sec+600*ms; at += 100 * ms {
			j.acct[r]["world"] = append(j.acct[r]["world"], acctPoint{t0 + at + 37*ms, total})
		}
	}
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	if len(results) != 4 {
		t.Fatalf("%d results, want one release per member: %+v", len(results), results)
	}
	for _, r := range results {
		want, acct := attribution.CollectiveConfirmed, int64(-256<<20)
		if r.Rank == 3 {
			want = attribution.CollectiveConfident
		}
		if r.Kind != attribution.KindPersistent || r.Classification != want || !hasCode(r, ReasonCommReleased) ||
			hasCode(r, ReasonAccountingCovers) != (want == attribution.CollectiveConfirmed) || r.ExcessBytes >= 0 {
			t.Errorf("rank %d: %s %s %d %v, want a %s step down", r.Rank, r.Kind, r.Classification, r.ExcessBytes, r.ReasonCodes, want)
		}
		if want == attribution.CollectiveConfirmed && (r.NCCLAccountedBytes == nil || *r.NCCLAccountedBytes != acct) {
			t.Errorf("rank %d: nccl_accounted_bytes %v, want %d", r.Rank, r.NCCLAccountedBytes, acct)
		}
	}
}

// A restarted rank's new process starts with the dead one's memory still
// on the device, freed 2.6 s later; the re-created communicator's first
// use comes 2.4 s after that, a step of 260 MiB on every member. The fall
// ended the lingering level: the restarted rank's step is judged against
// the level after it, and found at its onset as the survivors' are, though
// the span before the onset holds more lingering samples than samples of
// the level the step rose from (evidence-mode §7.1).
func TestFirstUseStepAfterTheDeadProcessIsFreed(t *testing.T) {
	const interval = 50 * ms
	j := newSim(4, interval, 50*sec)
	for k := int64(0); k < 16; k++ {
		j.collective("world", k, "all_reduce", rankList(0, 4), k*sec+600*ms, 300*ms, false)
	}
	const back, freed, firstUse = 28 * sec, 30*sec + 600*ms, 33*sec + 10*ms
	for k := int64(33); k < 50; k++ {
		j.collective("world.1", k, "all_reduce", rankList(0, 4), k*sec, 300*ms, false)
	}
	j.change([]int{3}, back, -1, 374<<20)           // the new process's level
	j.change([]int{3}, back, freed, 810<<20)        // the dead process's memory
	j.change(rankList(0, 4), firstUse, -1, 260<<20) // NCCL's buffers of world.1
	in := j.input()
	s := &in.Ranks[3].Samples
	keep := func(ts int64) bool { return ts < t0+15*sec+700*ms || ts >= t0+back }
	var times, gaps, totals []int64
	s.SessionIDs = []string{"old", "new"}
	for i, ts := range s.TimesNs {
		if keep(ts) {
			times, gaps, totals = append(times, ts), append(gaps, s.GapBytes[i]), append(totals, s.TotalBytes[i])
			s.Session = append(s.Session, int32(b2i(ts >= t0+back)))
		}
	}
	s.TimesNs, s.GapBytes, s.TotalBytes = times, gaps, totals
	results := Attribute(in, withMinConfidence(t, 0), nil)
	for r := range 4 {
		got := j.resultsAt(results, r, firstUse+interval)
		if len(got) != 1 || got[0].Kind != attribution.KindPersistent || got[0].Classification != attribution.CollectiveConfident ||
			!hasCode(got[0], ReasonStepAtFirstUse) || got[0].ExcessBytes < 200<<20 {
			t.Errorf("rank %d: %+v, want one confident persistent step at world.1's first use", r, got)
		}
	}
}

// A communicator split with shared resources reports its memory manager's
// total, which another communicator's series follows in lock step: the
// manager and its buffers outlive the released communicator, so its last
// total does not say what the release freed, and the release stays
// confident (evidence-mode §7.1).
func TestReleaseOfASharedManagerStaysConfident(t *testing.T) {
	j := abortedJob()
	for r := range 4 {
		j.acct[r] = map[string][]acctPoint{}
		for at := int64(0); at < j.duration; at += 100 * ms {
			total := int64(256 << 20)
			if at < 5*sec {
				total = 192 << 20 // the manager grew once: the two series move together
			}
			if at < 25*sec+600*ms {
				j.acct[r]["world"] = append(j.acct[r]["world"], acctPoint{t0 + at + 37*ms, total})
			}
			j.acct[r]["world.split"] = append(j.acct[r]["world.split"], acctPoint{t0 + at + 37*ms, total})
		}
	}
	results := Attribute(j.input(), withMinConfidence(t, 0), nil)
	if len(results) != 4 {
		t.Fatalf("%d results, want one release per member: %+v", len(results), results)
	}
	for _, r := range results {
		if r.Kind != attribution.KindPersistent || r.Classification != attribution.CollectiveConfident || !hasCode(r, ReasonCommReleased) ||
			hasCode(r, ReasonAccountingCovers) || r.ExcessBytes >= 0 {
			t.Errorf("rank %d: %s %s %d %v, want a confident step down", r.Rank, r.Kind, r.Classification, r.ExcessBytes, r.ReasonCodes)
		}
	}
}
