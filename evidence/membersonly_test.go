package evidence

import (
	"slices"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// membersOnlyAt returns the results of rank at true time at that say the
// members' accounting alone made them.
func membersOnlyAt(j *simJob, results []attribution.Result, rank int, at int64) []attribution.Result {
	var out []attribution.Result
	for _, r := range j.resultsAt(results, rank, at) {
		if hasCode(r, ReasonAccountingMembersOnly) {
			out = append(out, r)
		}
	}
	return out
}

// sparseReportTimes are report times every 2 s at .1 s: none falls inside
// an op (.6–.9 s of each second), so such a rank's reports cannot tell a
// change there.
func sparseReportTimes(duration int64) []int64 {
	var out []int64
	for t := 100 * ms; t < duration; t += 2 * sec {
		out = append(out, t)
	}
	return out
}

// At 2 Hz a spike the length of a collective falls between two samples.
// Ranks 0–3 report NCCL's totals every 100 ms, which show the op's buffers;
// ranks 4–7 report every 2 s, never inside an op: nothing of theirs saw the
// spike, but a collective allocates its buffers on every member, so their
// members' reports make their results (evidence-mode §2.5).
func TestMembersOnlyUnseenChange(t *testing.T) {
	j := trainingJob(8, 500*ms) // samples at .0 and .5 s: the op runs .6–.9 s
	j.worldAllReduces()
	caused := j.collectiveSpike(rankList(0, 8), 10, gib)
	j.collectiveSpike(rankList(0, 8), 20, gib) // not NCCL's: no report shows it
	j.accounting(rankList(0, 4), "world", 300<<20, []overlay{caused})
	j.accountingAt(rankList(4, 8), "world", 300<<20, []overlay{caused}, sparseReportTimes(j.duration))
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := 0; r < 8; r++ {
		at := 10*sec + 700*ms
		got := membersOnlyAt(j, results, r, at)
		if r < 4 {
			if len(got) != 0 || len(accountingOnlyAt(j, results, r, at)) != 1 {
				t.Errorf("rank %d: %d members-only results, %d accounting-only, want its own reports' result alone",
					r, len(got), len(accountingOnlyAt(j, results, r, at)))
			}
			continue
		}
		if len(got) != 1 {
			t.Fatalf("rank %d: %d members-only results at the unseen NCCL spike, want 1: %+v", r, len(got), j.resultsAt(results, r, at))
		}
		c := got[0]
		if c.Classification != attribution.CollectiveConfirmed || c.Confidence != membersOnlyConfidence || c.Kind != attribution.KindTransient {
			t.Errorf("rank %d: %s %v %s, want confirmed %v transient", r, c.Classification, c.Confidence, c.Kind, membersOnlyConfidence)
		}
		if c.ExcessBytes != gib || c.NCCLAccountedBytes != nil || c.Evidence.PeakGapBytes != 0 {
			t.Errorf("rank %d: excess %d accounted %v peak %d, want the members' 1 GiB, no accounting or peak sample of its own",
				r, c.ExcessBytes, c.NCCLAccountedBytes, c.Evidence.PeakGapBytes)
		}
		// The op on ranks 4–7 is launched 0, 3, 6, 9 ms late (r%4) and
		// lasts 300 ms: the result is that interval.
		opStart := t0 + 10*sec + 600*ms + int64(r%4)*3*ms
		if c.IntervalStartNs != opStart || c.IntervalEndNs != uint64(opStart+300*ms) {
			t.Errorf("rank %d: interval [%d, %d] ms, want the op's [%d, %d]", r, (c.IntervalStartNs-t0)/ms,
				(int64(c.IntervalEndNs)-t0)/ms, (opStart-t0)/ms, (opStart+300*ms-t0)/ms)
		}
		if c.Collective == nil || c.Collective.CommID != "world" || c.Collective.Seq != 10 {
			t.Errorf("rank %d: collective %+v, want world #10", r, c.Collective)
		}
		if n := len(j.resultsAt(results, r, 20*sec+700*ms)); n != 0 {
			t.Errorf("rank %d: %d results at the unseen spike no member's reports show, want none", r, n)
		}
		// Every other op of the job: no member's reports show buffers.
		if n := len(membersOnlyAt(j, results, r, 5*sec+700*ms)); n != 0 {
			t.Errorf("rank %d: %d members-only results at an op without growth, want none", r, n)
		}
	}
}

// The members' accounting speaks for a rank only where nothing of the rank
// could see the change, and only where more members show the buffers than
// deny them.
func TestMembersOnlyGuards(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(j *simJob, caused overlay)
		want  int // members-only results on rank 7 at 10.7 s
	}{
		{"shown by the members", func(j *simJob, caused overlay) {
			j.accounting(rankList(0, 7), "world", 300<<20, []overlay{caused})
		}, 1},
		{"the rank's own reports deny it", func(j *simJob, caused overlay) {
			j.accounting(rankList(0, 7), "world", 300<<20, []overlay{caused})
			j.accounting([]int{7}, "world", 300<<20, nil)
		}, 0},
		{"more members deny it than show it", func(j *simJob, caused overlay) {
			j.accounting(rankList(0, 2), "world", 300<<20, []overlay{caused})
			j.accounting(rankList(2, 7), "world", 300<<20, nil)
		}, 0},
		{"untracked members (cuMem off) show nothing", func(j *simJob, caused overlay) {
			j.accountingAt(rankList(0, 7), "world", UntrackedBytes, nil, []int64{39 * sec})
		}, 0},
		{"the members' growth is a step that stays, not this op's", func(j *simJob, _ overlay) {
			j.accounting(rankList(0, 7), "world", 300<<20, []overlay{{10*sec + 605*ms, -1, gib}})
		}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j := trainingJob(8, 500*ms)
			j.worldAllReduces()
			caused := j.collectiveSpike(rankList(0, 8), 10, gib)
			tt.setup(j, caused)
			if j.acct[7] == nil { // rank 7's reports, none inside an op
				j.accountingAt([]int{7}, "world", 300<<20, []overlay{caused}, sparseReportTimes(j.duration))
			}
			results := Attribute(j.input(), mediumConfig(t), nil)
			if got := membersOnlyAt(j, results, 7, 10*sec+700*ms); len(got) != tt.want {
				t.Errorf("%d members-only results on rank 7, want %d: %+v", len(got), tt.want, j.resultsAt(results, 7, 10*sec+700*ms))
			}
		})
	}
}

// A rank whose samples lie inside the op saw what was there: the members'
// reports do not speak for it.
func TestMembersOnlyNotWhereSampled(t *testing.T) {
	j := trainingJob(8, 100*ms)
	j.worldAllReduces()
	caused := j.collectiveSpike(rankList(0, 7), 10, gib) // rank 7 sampled flat through the op
	j.accounting(rankList(0, 7), "world", 300<<20, []overlay{caused})
	j.accountingAt([]int{7}, "world", 300<<20, nil, sparseReportTimes(j.duration))
	results := Attribute(j.input(), mediumConfig(t), nil)
	if got := membersOnlyAt(j, results, 7, 10*sec+700*ms); len(got) != 0 {
		t.Errorf("%d members-only results on a rank sampled through the op, want none: %+v", len(got), got)
	}
}

// A report raised right after a reduce_scatter ended (within the match
// tolerance of it) and inside the all_reduce launched 20 ms later may be
// either op's: the members' reports speak only for the op a raised report
// lies inside, so no rank gets a result at the reduce_scatter.
func TestMembersOnlyNotFromANeighbouringOp(t *testing.T) {
	j := trainingJob(8, 500*ms)
	j.worldAllReduces() // .6–.9 s of each second
	j.collective("world", 10, "reduce_scatter", rankList(0, 8), 10*sec+500*ms, 80*ms, false)
	caused := j.collectiveSpike(rankList(0, 8), 10, gib) // the all_reduce's, from .605 s
	// Ranks 0–3 report at .45, .61 (raised) and .95 s; ranks 4–7 every 2 s.
	j.accountingAt(rankList(0, 4), "world", 300<<20, []overlay{caused}, []int64{10*sec + 450*ms, 10*sec + 610*ms, 10*sec + 950*ms})
	j.accountingAt(rankList(4, 8), "world", 300<<20, []overlay{caused}, sparseReportTimes(j.duration))
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := 4; r < 8; r++ {
		for _, x := range membersOnlyAt(j, results, r, 10*sec+540*ms) {
			if x.Collective != nil && x.Collective.Op == "reduce_scatter" {
				t.Errorf("rank %d: a members-only result at the reduce_scatter %+v, want none", r, x)
			}
		}
	}
}

// A sample after the op that sees another cause's change (a workspace
// allocated right after the all_reduce) does not make the op seen: the
// op's buffers lived within the op, the change is judged on its own (here
// NCCL's reports inside it deny it), and the members' reports speak for the
// op.
func TestMembersOnlyBesideALaterChange(t *testing.T) {
	j := trainingJob(8, 500*ms) // samples at .0 and .5 s: the op runs .6–.9 s
	j.worldAllReduces()
	caused := j.collectiveSpike(rankList(0, 8), 10, gib)
	j.change([]int{7}, 10*sec+950*ms, 11*sec+200*ms, gib/2) // seen at 11.0 s only
	j.accounting(rankList(0, 7), "world", 300<<20, []overlay{caused})
	var times []int64 // rank 7: every 2 s at .1, and one inside the workspace
	for _, t := range sparseReportTimes(j.duration) {
		times = append(times, t)
		if t == 10*sec+100*ms {
			times = append(times, 11*sec+100*ms)
		}
	}
	j.accountingAt([]int{7}, "world", 300<<20, []overlay{caused}, times)
	results := Attribute(j.input(), mediumConfig(t), nil)
	if got := membersOnlyAt(j, results, 7, 10*sec+700*ms); len(got) != 1 {
		t.Errorf("%d members-only results on rank 7 at the op, want 1: %+v", len(got), j.resultsAt(results, 7, 10*sec+700*ms))
	}
}

// Where most members whose samples could have seen the op saw no change
// there, its buffers are not on every member (a tensor-parallel group's
// spike at a world op): the members' reports do not speak for the others.
func TestMembersOnlyNotWhereMostSampledMembersAreFlat(t *testing.T) {
	j := trainingJob(8, 100*ms)
	for k := int64(0); k < j.duration/sec; k++ {
		j.collective("world", k, "broadcast", rankList(0, 8), k*sec+620*ms, 60*ms, false)
	}
	caused := overlay{10*sec + 615*ms, 10*sec + 850*ms, gib} // seen at .7 and .8 s on ranks 0–3 only
	j.change(rankList(0, 4), caused.start, caused.end, caused.bytes)
	j.accounting(rankList(0, 4), "world", 300<<20, []overlay{caused})
	j.accountingAt(rankList(4, 8), "world", 300<<20, nil, sparseReportTimes(j.duration))
	results := Attribute(j.input(), mediumConfig(t), nil)
	if got := j.resultsAt(results, 0, 10*sec+700*ms); len(got) == 0 || !hasCode(got[0], ReasonAccountingCovers) {
		t.Fatalf("rank 0: %+v at the spike, want its reports' confirmation (the test's premise)", got)
	}
	for r := 4; r < 8; r++ {
		if got := membersOnlyAt(j, results, r, 10*sec+650*ms); len(got) != 0 {
			t.Errorf("rank %d: %d members-only results where most sampled members were flat, want none: %+v", r, len(got), got)
		}
	}
}

// At sparse sampling a member's one sample inside the op can lie in a
// change that rose before it (a workspace held up to the launch, merged
// with the op's buffers between two samples): it neither shows the op's
// change at its marker nor was seen flat while the op ran, so it does not
// count against the members' reports, which speak for the members no
// sample of whose fell inside the op (evidence-mode §2.5).
func TestMembersOnlyNotDeniedByMembersInAnEarlierChange(t *testing.T) {
	j := trainingJob(8, 500*ms) // the op runs .6–.9 s
	j.phase = map[int]int64{0: 200 * ms, 1: 200 * ms, 2: 150 * ms, 3: 150 * ms, 4: 150 * ms}
	j.worldAllReduces()
	caused := j.collectiveSpike(rankList(0, 8), 10, gib)
	// Ranks 2–4: a workspace from 10.05 s to the op's launch, seen at 10.15
	// s; their sample at 10.65 s shows the op's buffers, one change with it.
	j.change(rankList(2, 5), 10*sec+50*ms, 10*sec+600*ms, gib/2)
	wantMembersOnlyFrom(t, j, caused, 5)
}

// A member sampled just before the launch and just after the op's buffers
// were freed (within the match tolerance on both sides, none inside the op)
// saw nothing of them: it does not count against the members' reports,
// which speak for it (evidence-mode §2.5).
func TestMembersOnlyNotDeniedByMembersSampledAroundTheOp(t *testing.T) {
	j := trainingJob(8, 350*ms) // the op runs .6–.9 s, its buffers to .92 s
	j.phase = map[int]int64{0: 220 * ms, 1: 220 * ms}
	for r := 2; r < 8; r++ {
		j.phase[r] = 80 * ms // samples at 10.58 and 10.93 s
	}
	j.worldAllReduces()
	caused := j.collectiveSpike(rankList(0, 8), 10, gib)
	wantMembersOnlyFrom(t, j, caused, 2)
}

// wantMembersOnlyFrom reports NCCL's accounting of change caused at the
// world op of second 10 (.6–.9 s) on ranks 0–1 (inside the op) and on ranks
// 2–7 every 2 s (never inside it), checks ranks 0–1 confirm their sampled
// change by their reports (the test's premise), and wants one members-only
// result at the op on each of ranks lo–7.
func wantMembersOnlyFrom(t *testing.T, j *simJob, caused overlay, lo int) {
	t.Helper()
	j.accounting(rankList(0, 2), "world", 300<<20, []overlay{caused})
	j.accountingAt(rankList(2, 8), "world", 300<<20, []overlay{caused}, sparseReportTimes(j.duration))
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := 0; r < 2; r++ {
		if got := j.resultsAt(results, r, 10*sec+700*ms); len(got) != 1 || !hasCode(got[0], ReasonAccountingCovers) {
			t.Fatalf("rank %d: %+v at the op, want its sample's change confirmed by its reports (the test's premise)", r, got)
		}
	}
	for r := lo; r < 8; r++ {
		if got := membersOnlyAt(j, results, r, 10*sec+700*ms); len(got) != 1 {
			t.Errorf("rank %d: %d members-only results at the op, want 1: %+v", r, len(got), j.resultsAt(results, r, 10*sec+700*ms))
		}
	}
}

// In a job's first seconds a host's first poll can come after an op: ranks
// 4–7 are first sampled at 3 s and first report at 3.7 s, after the
// all_reduce of 2.6–2.9 s whose buffers ranks 0–3's reports show. Nothing
// of theirs could have seen the op, as if it fell between two samples: the
// members speak for them (evidence-mode §2.5). A spike no member's reports
// show gets nothing there.
func TestMembersOnlyBeforeTheRanksFirstSample(t *testing.T) {
	j := trainingJob(8, 500*ms) // samples at .0 and .5 s: the op runs .6–.9 s
	j.worldAllReduces()
	caused := j.collectiveSpike(rankList(0, 8), 2, gib)
	j.collectiveSpike(rankList(0, 8), 1, gib) // not NCCL's: no report shows it
	j.phase = map[int]int64{4: 3 * sec, 5: 3 * sec, 6: 3 * sec, 7: 3 * sec}
	j.accounting(rankList(0, 4), "world", 300<<20, []overlay{caused})
	var late []int64
	for k := int64(3); k < 40; k++ {
		late = append(late, k*sec+700*ms)
	}
	j.accountingAt(rankList(4, 8), "world", 300<<20, []overlay{caused}, late)
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := 4; r < 8; r++ {
		got := membersOnlyAt(j, results, r, 2*sec+700*ms)
		if len(got) != 1 || got[0].ExcessBytes != gib || got[0].Collective == nil || got[0].Collective.Seq != 2 {
			t.Errorf("rank %d: members-only results at the op before its first sample %+v, want one of world #2, 1 GiB",
				r, j.resultsAt(results, r, 2*sec+700*ms))
		}
		if n := len(j.resultsAt(results, r, 1*sec+700*ms)); n != 0 {
			t.Errorf("rank %d: %d results at the spike no member's reports show, want none", r, n)
		}
	}
}

// At a job's end a host's last poll can come before an op: ranks 4–7 are
// last sampled at 37 s, before the all_reduce of 38.6–38.9 s whose buffers
// ranks 0–3's reports show. Nothing of theirs could have seen the op, as if
// it fell between two samples: the members speak for them (evidence-mode
// §2.5). A spike no member's reports show gets nothing there.
func TestMembersOnlyAfterTheRanksLastSample(t *testing.T) {
	j := trainingJob(8, 500*ms) // samples at .0 and .5 s: the op runs .6–.9 s
	j.worldAllReduces()
	caused := j.collectiveSpike(rankList(0, 8), 38, gib)
	j.collectiveSpike(rankList(0, 8), 37, gib) // not NCCL's: no report shows it
	j.accounting(rankList(0, 4), "world", 300<<20, []overlay{caused})
	j.accountingAt(rankList(4, 8), "world", 300<<20, []overlay{caused}, sparseReportTimes(j.duration))
	in := j.input()
	for r := 4; r < 8; r++ {
		s := &in.Ranks[r].Samples
		n, _ := slices.BinarySearch(s.TimesNs, t0+37*sec+1)
		s.TimesNs, s.GapBytes, s.TotalBytes = s.TimesNs[:n], s.GapBytes[:n], s.TotalBytes[:n]
	}
	results := Attribute(in, mediumConfig(t), nil)
	for r := 4; r < 8; r++ {
		got := membersOnlyAt(j, results, r, 38*sec+700*ms)
		if len(got) != 1 || got[0].ExcessBytes != gib || got[0].Collective == nil || got[0].Collective.Seq != 38 {
			t.Errorf("rank %d: members-only results at the op after its last sample %+v, want one of world #38, 1 GiB",
				r, j.resultsAt(results, r, 38*sec+700*ms))
		}
		if n := len(j.resultsAt(results, r, 37*sec+700*ms)); n != 0 {
			t.Errorf("rank %d: %d results at the spike no member's reports show, want none", r, n)
		}
	}
}

// A member's only report inside an op may come a few ms after the op's end
// as its clock reads it, within the match tolerance, while NCCL still held
// the buffers (rank 0 reports once a second at .91 s; the op ends at .90
// s, its buffers at .92 s). Where no other op of the communicator lies
// there, the report can be no other op's: it shows the op's buffers, and
// the members that nothing of their own saw are spoken for. Where another
// op of the communicator begins within the tolerance, the report may be
// that op's, and it speaks for no one (evidence-mode §2.5).
func TestMembersOnlyShownByAReportJustAfterTheOp(t *testing.T) {
	for _, tt := range []struct {
		name      string
		neighbour bool
		want      int // members-only results per rank 1–7 at the op
	}{
		{"no other op near", false, 1},
		{"the next op within the tolerance", true, 0},
	} {
		j := trainingJob(8, 500*ms) // samples at .0 and .5 s: the op runs .6–.9 s
		j.worldAllReduces()
		if tt.neighbour {
			j.collective("world", 1000, "all_gather", rankList(0, 8), 10*sec+930*ms, 50*ms, false)
		}
		caused := j.collectiveSpike(rankList(0, 8), 10, gib)
		var times []int64
		for k := int64(0); k < 40; k++ {
			times = append(times, k*sec+910*ms)
		}
		j.accountingAt([]int{0}, "world", 300<<20, []overlay{caused}, times)
		j.accountingAt(rankList(1, 8), "world", 300<<20, []overlay{caused}, sparseReportTimes(j.duration))
		results := Attribute(j.input(), mediumConfig(t), nil)
		for r := 1; r < 8; r++ {
			if got := membersOnlyAt(j, results, r, 10*sec+700*ms); len(got) != tt.want {
				t.Errorf("%s, rank %d: %d members-only results at the op, want %d: %+v", tt.name, r, len(got), tt.want,
					j.resultsAt(results, r, 10*sec+700*ms))
			}
		}
	}
}
