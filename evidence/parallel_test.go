package evidence

import (
	"reflect"
	"testing"
)

// TestAttributeParallelGivesTheSameResults: a job's results do not depend
// on how many goroutines analyse its ranks (the simulated job with steps,
// spikes and NCCL accounting of BenchmarkAttributeAccounting's shape; the
// window's tests run a generated job's records the same way).
func TestAttributeParallelGivesTheSameResults(t *testing.T) {
	cfg := mediumConfig(t)
	input := func() *Input {
		j := newSim(48, 100*ms, 60*sec)
		all := rankList(0, 48)
		for s := range int64(60) {
			j.collective("world", s, "all_reduce", all, s*sec+500*ms, 20*ms, false)
		}
		j.change(all, 10*sec+500*ms, 10*sec+700*ms, 2*gib)
		j.change(rankList(0, 24), 30*sec+500*ms, -1, 1*gib)
		j.accounting(all, "world", 512<<20, []overlay{{30*sec + 500*ms, -1, 1 * gib}})
		j.noise = 1 << 20
		return j.input()
	}
	want := Attribute(input(), cfg, nil)
	if len(want) == 0 {
		t.Fatal("the job gives no results: nothing compared")
	}
	for _, workers := range []int{2, 3, 8} {
		if got := AttributeParallel(input(), cfg, nil, workers); !reflect.DeepEqual(got, want) {
			t.Fatalf("%d workers: %d results differ from one worker's %d", workers, len(got), len(want))
		}
	}
}
