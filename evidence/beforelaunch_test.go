package evidence

import (
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// A member sampled just before its launch of an op, and next only after the
// op's buffers were freed, saw nothing of the op: NCCL allocates them at
// the launch, on the clock that stamps the rank's samples and markers. It
// counts neither for nor against the members that show the op's change
// (wide parallel_3d, seed 52: a 106 ms DP all_reduce at 5 Hz, 4 of 8
// members sampled inside it, each 2 GiB up, the other 4 sampled 5–50 ms
// before their launch and next after the change ended).
func TestSynchronyMemberSampledOnlyBeforeTheLaunch(t *testing.T) {
	j := newSim(8, 200*ms, 40*sec)
	j.phase = map[int]int64{0: 60 * ms, 1: 60 * ms, 2: 60 * ms, 3: 60 * ms,
		4: 190 * ms, 5: 190 * ms, 6: 190 * ms, 7: 190 * ms}
	ranks := rankList(0, 8)
	j.collective("dp", 7, "all_reduce", ranks, 20*sec, 106*ms, false)
	j.change(ranks, 20*sec+5*ms, 20*sec+125*ms, 2*gib)
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
}
