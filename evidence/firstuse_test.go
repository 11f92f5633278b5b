package evidence

import (
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// persistentAt is rank's persistent result whose interval holds t.
func persistentAt(j *simJob, results []attribution.Result, rank int, t int64) (attribution.Result, bool) {
	for _, r := range j.resultsAt(results, rank, t) {
		if r.Kind == attribution.KindPersistent {
			return r, true
		}
	}
	return attribution.Result{}, false
}

// FSDP-like: a shard and a replica communicator connect at their first use
// in the job's first step, half a second apart: two steps closer together
// than the baseline span, each reported at its own onset.
func TestStepsCloseTogetherAtFirstUse(t *testing.T) {
	for _, interval := range []int64{100 * ms, 200 * ms} {
		j := trainingJob(8, interval)
		j.collective("shard", 0, "all_gather", rankList(0, 8), 1*sec+20*ms, 60*ms, false)
		j.collective("replica", 0, "all_reduce", rankList(0, 8), 1*sec+620*ms, 200*ms, false)
		j.change(rankList(0, 8), 1*sec+25*ms, -1, gib)
		j.change(rankList(0, 8), 1*sec+625*ms, -1, 768<<20)
		results := Attribute(j.input(), mediumConfig(t), nil)
		for r := 0; r < 8; r++ {
			for _, at := range []int64{1*sec + 50*ms, 1*sec + 650*ms} {
				// The claim covers the op the step began in (at 5 Hz the
				// rise gap is longer than the op: §7.6).
				x, ok := persistentAt(j, results, r, at)
				if !ok || x.Classification != attribution.CollectiveConfident || !hasCode(x, ReasonStepAtFirstUse) {
					t.Errorf("every %d ms, rank %d: no confident first-use step at %d ms: %+v", interval/ms, r, at/ms, j.resultsAt(results, r, at))
				}
			}
		}
	}
}

// A step in the rank's first samples is a candidate: reported where a
// communicator's first use on every member explains it, or NCCL's total of
// a communicator created there grew by it; dropped otherwise.
func TestEarlyStep(t *testing.T) {
	t.Run("at a first use", func(t *testing.T) {
		j := trainingJob(8, 100*ms)
		j.collective("shard", 0, "all_gather", rankList(0, 8), 150*ms, 60*ms, false)
		j.change(rankList(0, 8), 155*ms, -1, gib)
		results := Attribute(j.input(), mediumConfig(t), nil)
		for r := 0; r < 8; r++ {
			if x, ok := persistentAt(j, results, r, 200*ms); !ok || x.Classification != attribution.CollectiveConfident {
				t.Errorf("rank %d: %+v, want a confident step", r, j.resultsAt(results, r, 200*ms))
			}
		}
	})
	t.Run("confirmed by a new communicator's total", func(t *testing.T) {
		j := trainingJob(2, 100*ms)
		j.collective("shard", 0, "all_gather", []int{0}, 150*ms, 60*ms, false) // one member's marker only
		j.change([]int{0}, 155*ms, -1, gib)
		j.accountingEvery([]int{0}, "shard", 0, []overlay{{155 * ms, -1, gib}}, 100*ms)
		results := Attribute(j.input(), mediumConfig(t), nil)
		if x, ok := persistentAt(j, results, 0, 200*ms); !ok || x.Classification != attribution.CollectiveConfirmed {
			t.Errorf("%+v, want a confirmed step", j.resultsAt(results, 0, 200*ms))
		}
	})
	t.Run("no first use", func(t *testing.T) {
		j := trainingJob(8, 100*ms)
		j.worldAllReduces()
		j.change(rankList(0, 8), 155*ms, -1, gib)
		results := Attribute(j.input(), withMinConfidence(t, 0), nil)
		for r := 0; r < 8; r++ {
			if got := j.resultsAt(results, r, 200*ms); len(got) != 0 {
				t.Errorf("rank %d: %+v, want nothing", r, got)
			}
		}
	})
}

// At 5 Hz a collective's spike can end onto the next step's first-use level
// with no sample between: the spike is a change of its own and the step
// begins where the series settles on its level.
func TestStepAfterSpike(t *testing.T) {
	j := trainingJob(8, 200*ms)
	j.worldAllReduces()
	j.collective("world", 0, "all_gather", rankList(0, 8), 11*sec, 60*ms, false)
	j.change(rankList(0, 8), 10*sec+605*ms, 11*sec+50*ms, 2*gib)
	j.change(rankList(0, 8), 11*sec+5*ms, -1, gib)
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := 0; r < 8; r++ {
		x, ok := persistentAt(j, results, r, 11*sec+30*ms)
		if !ok || x.Classification != attribution.CollectiveConfident || x.ExcessBytes != gib {
			t.Errorf("rank %d: %+v, want a confident 1 GiB step at the all_gather", r, j.resultsAt(results, r, 11*sec+30*ms))
		}
		if got := j.resultsAt(results, r, 10*sec+800*ms); len(got) != 1 || got[0].Kind != attribution.KindTransient {
			t.Errorf("rank %d: %+v, want the spike as a transient", r, got)
		}
	}
}

// A spike lower than the step it ends onto looks like the lower stair of a
// staircase; no first use explains it, so it is the spike it is.
func TestSpikeOntoHigherStep(t *testing.T) {
	j := trainingJob(8, 100*ms)
	j.worldAllReduces()
	j.collective("world", 0, "all_gather", rankList(0, 8), 11*sec, 60*ms, false)
	j.change(rankList(0, 8), 10*sec+605*ms, 11*sec+5*ms, gib)
	j.change(rankList(0, 8), 11*sec+5*ms, -1, 2*gib)
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := 0; r < 8; r++ {
		if x, ok := persistentAt(j, results, r, 11*sec+100*ms); !ok || x.Classification != attribution.CollectiveConfident {
			t.Errorf("rank %d: %+v, want a confident step at the all_gather", r, j.resultsAt(results, r, 11*sec+100*ms))
		}
		got := j.resultsAt(results, r, 10*sec+800*ms)
		if len(got) != 1 || got[0].Kind != attribution.KindTransient || got[0].Collective == nil || got[0].Collective.Op != "all_reduce" {
			t.Errorf("rank %d: %+v, want the spike as a transient at the all_reduce", r, got)
		}
	}
}

// Steps of a rank never overlap: the processor reads a result that starts
// inside one it emitted as that one grown.
func TestSeparateSteps(t *testing.T) {
	p := attribution.KindPersistent
	tr := attribution.KindTransient
	rs := []attribution.Result{
		{Rank: 0, IntervalStartNs: 100, IntervalEndNs: 340, Kind: tr},
		{Rank: 0, IntervalStartNs: 200, IntervalEndNs: 440, Kind: p},
		{Rank: 0, IntervalStartNs: 300, IntervalEndNs: 540, Kind: tr},
		{Rank: 0, IntervalStartNs: 400, IntervalEndNs: 640, Kind: p},
		{Rank: 1, IntervalStartNs: 500, IntervalEndNs: 740, Kind: p},
	}
	separateSteps(rs)
	want := []uint64{340, 399, 540, 640, 740}
	for i, r := range rs {
		if r.IntervalEndNs != want[i] {
			t.Errorf("result %d ends at %d, want %d", i, r.IntervalEndNs, want[i])
		}
	}
}

// lazy_stepup: a collective's spike comes back to the old level a second
// and a half before the next step (a communicator's first use): the spike
// is no step of its own, though the step's level follows within the
// baseline span.
func TestSpikeBeforeStepIsNoStep(t *testing.T) {
	j := trainingJob(8, 100*ms)
	j.worldAllReduces()
	j.collectiveSpike(rankList(0, 8), 20, gib)
	j.collective("replica", 0, "all_gather", rankList(0, 8), 22*sec+100*ms, 60*ms, false)
	j.change(rankList(0, 8), 22*sec+105*ms, -1, 2*gib)
	results := Attribute(j.input(), mediumConfig(t), nil)
	for r := range 8 {
		if x, ok := persistentAt(j, results, r, 20*sec+700*ms); ok {
			t.Errorf("rank %d: a step at the spike: %s %v", r, x.Classification, x.ReasonCodes)
		}
		if got := j.resultsAt(results, r, 20*sec+700*ms); len(got) != 1 || got[0].Kind != attribution.KindTransient {
			t.Errorf("rank %d: %+v, want one transient result at the spike", r, got)
		}
		if _, ok := persistentAt(j, results, r, 22*sec+200*ms); !ok {
			t.Errorf("rank %d: no step at 22.1 s", r)
		}
	}
}
