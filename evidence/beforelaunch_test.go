package evidence

import (
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// A member whose samples could not see an op counts neither for nor
// against the members that show the op's change: NCCL allocates the op's
// buffers at the launch and frees them at its end, on the clock that
// stamps the rank's samples and markers. Ranks 0-3 are sampled inside a
// 106 ms all_reduce at 5 Hz, each 2 GiB up; ranks 4-7 are not.
func TestSynchronyMemberThatCouldNotSeeTheOp(t *testing.T) {
	for _, tc := range []struct {
		name string
		// phase is ranks 4-7's sampling phase within each 200 ms and
		// changeEnd when the change ends, after the op's launch.
		phase, changeEnd int64
	}{
		// wide parallel_3d, seed 52: 4 of 8 members sampled inside the op,
		// the other 4 5-50 ms before their launch and next after the
		// change ended.
		{"sampled only before the launch", 190 * ms, 125 * ms},
		// seed 82: 3 of 8 members sampled inside a 102 ms op, 3 others
		// 29-39 ms after its end, once their change had ended (the
		// members showing it were seen holding it no later than the end).
		{"sampled only after the buffers were freed", 135 * ms, 120 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newSim(8, 200*ms, 40*sec)
			j.phase = map[int]int64{0: 60 * ms, 1: 60 * ms, 2: 60 * ms, 3: 60 * ms,
				4: tc.phase, 5: tc.phase, 6: tc.phase, 7: tc.phase}
			ranks := rankList(0, 8)
			j.collective("dp", 7, "all_reduce", ranks, 20*sec, 106*ms, false)
			j.change(ranks, 20*sec+5*ms, 20*sec+tc.changeEnd, 2*gib)
			cfg, err := ResolveConfig("low", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			results := Attribute(j.input(), cfg, nil)
			for r := 0; r < 4; r++ {
				got := one(t, j, results, r, 20*sec+60*ms)
				if got.Classification != attribution.CollectiveLikely || got.Collective == nil ||
					got.Collective.SynchronizedCommRanks != 4 || !hasCode(got, ReasonMemberSynchrony) {
					t.Errorf("rank %d: %s %.2f %v %+v, want likely with the 4 members that could see the op synchronized",
						r, got.Classification, got.Confidence, got.ReasonCodes, got.Collective)
				}
			}
			for r := 4; r < 8; r++ {
				if got := j.resultsAt(results, r, 20*sec+60*ms); len(got) != 0 {
					t.Errorf("rank %d, no sample in the change: %+v", r, got)
				}
			}
		})
	}
}

// Where the members that show the change were seen holding it past the
// op's end, a member sampled flat then counts against the op: a
// tensor-parallel group's workspace at a world op is not the op's.
func TestSynchronyMemberSampledFlatWhileTheOthersHeldTheChange(t *testing.T) {
	j := newSim(8, 200*ms, 40*sec)
	j.phase = map[int]int64{0: 140 * ms, 1: 140 * ms, 2: 140 * ms, 3: 140 * ms,
		4: 135 * ms, 5: 135 * ms, 6: 135 * ms, 7: 135 * ms}
	j.collective("dp", 7, "all_reduce", rankList(0, 8), 20*sec, 106*ms, false)
	j.change(rankList(0, 4), 20*sec+5*ms, 20*sec+300*ms, 2*gib)
	cfg, err := ResolveConfig("low", map[string]any{"min_confidence": 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	results := Attribute(j.input(), cfg, nil)
	for r := 0; r < 4; r++ {
		got := one(t, j, results, r, 20*sec+140*ms)
		if got.Classification != attribution.CollectiveSuspect || !hasCode(got, ReasonInsufficientSynchrony) {
			t.Errorf("rank %d: %s %.2f %v, want suspect: 4 members sampled flat while the others held the change",
				r, got.Classification, got.Confidence, got.ReasonCodes)
		}
	}
}
