package evidence

import (
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// sweptHostsJob is a job of 8 ranks on 2 hosts whose memory a host-wide
// poller (DCGM, nvidia-smi) reads every interval: the ranks of a host share
// its sample instants, the second host's come 400 ms after the first's.
// Every second a world all_reduce of 300 ms runs from 0.6 s.
func sweptHostsJob(interval, duration int64) *simJob {
	j := newSim(8, interval, duration)
	j.phase = map[int]int64{}
	for r := 4; r < 8; r++ {
		j.phase[r] = 400 * ms
	}
	for k := int64(0); k < duration/sec; k++ {
		j.collective("world", k, "all_reduce", rankList(0, 8), k*sec+600*ms, 300*ms, false)
	}
	return j
}

// A communicator's first use that the job ends a few polls after: the
// level rose on every member and stayed until the rank's last sample. The
// job ended on the new level; it is the step at first use at every
// preset, however many samples min_samples_per_rank asks after it.
func TestStepHeldToTheEndOfPolledData(t *testing.T) {
	j := sweptHostsJob(5*sec, 180*sec)
	j.collective("world", 0, "all_gather", rankList(0, 8), 154*sec+100*ms, 60*ms, false)
	j.change(rankList(0, 8), 154*sec+110*ms, -1, 768<<20)
	for _, preset := range []string{"low", "medium", "high"} {
		cfg, err := ResolveConfig(preset, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		results := Attribute(j.input(), cfg, nil)
		for r := range 8 {
			got := j.resultsAt(results, r, 154*sec+120*ms)
			if len(got) != 1 || got[0].Kind != attribution.KindPersistent || got[0].Classification != attribution.CollectiveConfident ||
				!hasCode(got[0], ReasonStepAtFirstUse) {
				t.Errorf("%s: rank %d: %+v, want the confident step at first use", preset, r, got)
			}
		}
	}
}

// A transient of a world all_reduce that one host's poll saw inside the op
// and the other's just after the op had ended (within the match
// tolerance, when the buffers were gone): the second host's members could
// not have seen it, so they are not judged, and the first host's change is
// synchronized at every preset.
func TestPollInToleranceMarginIsNoObservation(t *testing.T) {
	j := newSim(8, sec, 60*sec)
	j.phase = map[int]int64{}
	for r := range 8 {
		j.phase[r] = 700 * ms // inside each op
		if r >= 4 {
			j.phase[r] = 930 * ms // 30 ms after each op's end
		}
	}
	for k := int64(0); k < 60; k++ {
		j.collective("world", k, "all_reduce", rankList(0, 8), k*sec+500*ms, 400*ms, false)
	}
	j.change(rankList(0, 8), 30*sec+505*ms, 30*sec+915*ms, 2*gib)
	for _, preset := range []string{"low", "medium", "high"} {
		cfg, err := ResolveConfig(preset, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		results := Attribute(j.input(), cfg, nil)
		for r := range 4 {
			got := j.resultsAt(results, r, 30*sec+600*ms)
			if len(got) != 1 || got[0].Classification == attribution.CollectiveSuspect || got[0].Collective == nil ||
				got[0].Collective.SynchronizedCommRanks != 4 {
				t.Errorf("%s: rank %d: %+v, want a claim at the all_reduce, 4 members synchronized", preset, r, got)
			}
		}
	}
}

// A polled step's onset is known only to within the poll interval, but a
// step matched to a collective began at that op's launch: the claim covers
// the op, not the whole interval before the first high sample (where a
// single-rank workspace may have come and gone unsampled).
func TestPolledStepClaimCoversItsOp(t *testing.T) {
	j := sweptHostsJob(5*sec, 240*sec)
	j.collective("world", 0, "all_gather", rankList(0, 8), 101*sec+100*ms, 60*ms, false)
	j.change(rankList(0, 8), 101*sec+110*ms, -1, 768<<20)
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := range 8 {
		got := j.resultsAt(results, r, 101*sec+120*ms)
		if len(got) != 1 || got[0].Kind != attribution.KindPersistent {
			t.Fatalf("rank %d: %+v, want the step", r, got)
		}
		pad := mediumConfig(t).IntervalPaddingNs
		mk := j.markers[r]
		var launch, end int64
		for _, m := range mk {
			if m.Collective == j.colls[collectiveKey{"world", "all_gather", 0}] {
				launch, end = t0+m.StartNs, t0+m.EndNs
			}
		}
		if got[0].IntervalStartNs < launch-pad || got[0].EndNs() > end+pad {
			t.Errorf("rank %d: claim [%d, %d] ms, want within the all_gather [%d, %d] ms padded by %d ms", r,
				(got[0].IntervalStartNs-t0)/ms, (got[0].EndNs()-t0)/ms, (launch-t0)/ms, (end-t0)/ms, pad/ms)
		}
	}
}

// A first use's step and, in the same poll interval, a spike at the next
// op on every member: the first high sample shows both, the next one the
// step's level. The step may have begun under the spike, so its onset lies
// anywhere after the sample before: it is the step at the first use.
func TestPolledStepUnderASpike(t *testing.T) {
	j := newSim(8, sec, 60*sec)
	j.phase = map[int]int64{}
	for r := range 8 {
		j.phase[r] = 700 * ms // inside every all_reduce
		if r >= 4 {
			j.phase[r] = 750 * ms
		}
	}
	for k := int64(0); k < 60; k++ {
		j.collective("world", k, "all_reduce", rankList(0, 8), k*sec+600*ms, 300*ms, false)
	}
	j.collective("world", 0, "all_gather", rankList(0, 8), 30*sec+200*ms, 60*ms, false)
	j.change(rankList(0, 8), 30*sec+205*ms, -1, gib)
	j.change(rankList(0, 8), 30*sec+605*ms, 30*sec+905*ms, gib)
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := range 8 {
		x, ok := persistentAt(j, results, r, 30*sec+230*ms)
		if !ok || x.Classification != attribution.CollectiveConfident || !hasCode(x, ReasonStepAtFirstUse) {
			t.Errorf("rank %d: %+v, want the confident step at the all_gather's first use", r, j.resultsAt(results, r, 30*sec+230*ms))
		}
	}
}

// Two single-rank changes on two hosts polled at 1 Hz, each seen by one
// sample, around a 40 ms op that no poll fell in: neither change was seen
// while the op ran, so the op's members do not corroborate each other.
func TestPolledChangesOffAShortOp(t *testing.T) {
	j := newSim(8, sec, 60*sec)
	j.phase = map[int]int64{}
	for r := range 8 {
		j.phase[r] = 550 * ms
		if r >= 4 {
			j.phase[r] = 990 * ms
		}
	}
	for k := int64(0); k < 60; k++ {
		j.collective("world", 2*k, "reduce_scatter", rankList(0, 8), k*sec+460*ms, 40*ms, false)
		j.collective("world", 2*k+1, "all_reduce", rankList(0, 8), k*sec+670*ms, 250*ms, false)
	}
	j.change([]int{1}, 30*sec+400*ms, 31*sec+90*ms, gib)
	j.change([]int{5}, 30*sec+310*ms, 31*sec+240*ms, gib)
	results := Attribute(j.input(), mediumConfig(t), nil)
	for _, r := range []int{1, 5} {
		for _, x := range j.resultsAt(results, r, 30*sec+700*ms) {
			if x.Classification != attribution.CollectiveSuspect {
				t.Errorf("rank %d: %s %v %+v, want no claim", r, x.Classification, x.ReasonCodes, x.Collective)
			}
		}
	}
}

// pollsInsideOps is sweptHostsJob at 1 Hz with 150 ms all_reduces from
// k s + 600 ms: the first host polls at k s + 700 ms, inside every op, the
// second at k s + 200 ms, between them.
func pollsInsideOps() *simJob {
	j := newSim(8, sec, 60*sec)
	j.phase = map[int]int64{}
	for r := range 8 {
		j.phase[r] = 700 * ms
		if r >= 4 {
			j.phase[r] = 200 * ms
		}
	}
	for k := int64(0); k < 60; k++ {
		j.collective("world", k, "all_reduce", rankList(0, 8), k*sec+600*ms, 150*ms, false)
	}
	return j
}

// Spikes at two consecutive all_reduces, each seen by the first host's one
// poll inside it: the two high polls a second apart are one run of the
// samples, but NCCL's buffers of each op live within it, and no poll fell
// between the ops to see the memory fall back. They are two changes, each
// its op's: without accounting a claim at each op, not one change that
// outlasts the op it began in.
func TestPolledRunInsideConsecutiveOps(t *testing.T) {
	j := pollsInsideOps()
	j.change(rankList(0, 8), 30*sec+603*ms, 30*sec+760*ms, gib)
	j.change(rankList(0, 8), 31*sec+603*ms, 31*sec+760*ms, gib)
	for _, preset := range []string{"low", "medium", "high"} {
		cfg, err := ResolveConfig(preset, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		results := Attribute(j.input(), cfg, nil)
		for r := range 4 {
			for k, seq := range []int64{30, 31} {
				got := j.resultsAt(results, r, int64(30+k)*sec+700*ms)
				if len(got) != 1 || got[0].Classification != attribution.CollectiveLikely || got[0].Collective == nil ||
					got[0].Collective.Seq != seq || got[0].Collective.SynchronizedCommRanks != 4 {
					t.Errorf("%s: rank %d at op %d: %+v, want a likely claim of that op, 4 members synchronized", preset, r, seq, got)
				}
			}
		}
	}
}

// Another tenant on the first host's GPUs for 2.3 s: two of its three polls
// fall inside all_reduces, the third between ops (the op it would have
// needed was moved). A high poll outside every op shows memory held between
// them: one change, which outlasts the op it began in, and no claim.
func TestPolledRunHeldBetweenOps(t *testing.T) {
	j := newSim(8, sec, 60*sec)
	j.phase = map[int]int64{}
	for r := range 8 {
		j.phase[r] = 700 * ms
		if r >= 4 {
			j.phase[r] = 200 * ms
		}
	}
	for k := int64(0); k < 60; k++ {
		start := k*sec + 600*ms
		if k == 32 {
			start = k*sec + 300*ms
		}
		j.collective("world", k, "all_reduce", rankList(0, 8), start, 150*ms, false)
	}
	j.change(rankList(0, 4), 30*sec+650*ms, 32*sec+950*ms, gib)
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := range 4 {
		for _, at := range []int64{30*sec + 700*ms, 31*sec + 700*ms, 32*sec + 700*ms} {
			for _, x := range j.resultsAt(results, r, at) {
				if x.Classification != attribution.CollectiveSuspect {
					t.Errorf("rank %d at %d ms: %s %v %+v, want no claim", r, at/ms, x.Classification, x.ReasonCodes, x.Collective)
				}
			}
		}
	}
}

// A host-wide poll at 0.2 Hz whose only sample of an op's transient is a
// rank's first or last one: memory is high there and at the rank's level
// everywhere else. One end of the change is outside the data, so nothing
// shows whether it was a spike or a level; the sample is a change over
// the level beside it all the same, and with the op's synchrony it is the
// op's (evidence-mode §7.6, the edges of a rank's data).
func TestPolledChangeAtTheEdgeOfTheData(t *testing.T) {
	cases := []struct {
		name string
		job  func() (j *simJob, at int64, seen []int)
	}{
		{"last sample, after a step", func() (*simJob, int64, []int) {
			// A first use's step 35 s before the end: the baseline of the
			// last samples cannot reach back across it. The other host's
			// last poll came before the op's launch.
			j := sweptHostsJob(5*sec, 190*sec)
			j.collective("world", 0, "all_gather", rankList(0, 8), 150*sec+100*ms, 60*ms, false)
			j.change(rankList(0, 8), 150*sec+110*ms, -1, 768<<20)
			j.collective("world", 1000, "all_reduce", rankList(0, 8), 185*sec+100*ms, 400*ms, false)
			j.change(rankList(0, 8), 185*sec+110*ms, 185*sec+490*ms, 512<<20)
			return j, 185*sec + 400*ms, rankList(4, 8)
		}},
		{"first sample", func() (*simJob, int64, []int) {
			// Every rank's first poll falls inside the job's first
			// all_reduce; each later one reads the level.
			j := sweptHostsJob(5*sec, 120*sec)
			for r := range 4 {
				j.phase[r] = 300 * ms
			}
			j.collective("world", 1000, "all_reduce", rankList(0, 8), 200*ms, 300*ms, false)
			j.change(rankList(0, 8), 210*ms, 490*ms, 2*gib)
			return j, 350 * ms, rankList(0, 8)
		}},
	}
	for _, tc := range cases {
		for _, preset := range []string{"low", "medium", "high"} {
			cfg, err := ResolveConfig(preset, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			j, at, seen := tc.job()
			results := Attribute(j.input(), cfg, nil)
			for _, r := range seen {
				got := j.resultsAt(results, r, at)
				if len(got) != 1 || got[0].Classification == attribution.CollectiveSuspect || got[0].Collective == nil ||
					got[0].Collective.Seq != 1000 {
					t.Errorf("%s, %s: rank %d: %+v, want a claim at the all_reduce", tc.name, preset, r, got)
				}
			}
		}
	}
}
