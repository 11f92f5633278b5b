package evidence

import (
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// A spike on every member rising at the launch and falling at the end of
// its collective is confident only where the op lasts resolved_min_samples
// times the farthest a sample places a change from the launch or the end
// and still counts it there (a sampling interval plus the match
// tolerance): otherwise any co-timed change that lasts about as long as
// the op, a DDP workspace freed before the next step, passes as resolved
// (evidence-mode §3.4).
func TestResolvedNeedsTimingResolution(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval int64
		op       int64
		want     string
		code     string
	}{
		{"20 Hz, 300 ms op", 50 * ms, 300 * ms, attribution.CollectiveLikely, ReasonCotimedOnly},
		{"10 Hz, 500 ms op", 100 * ms, 500 * ms, attribution.CollectiveLikely, ReasonCotimedOnly},
		{"20 Hz, 500 ms op", 50 * ms, 500 * ms, attribution.CollectiveConfident, ReasonResolvedInInterval},
		{"100 Hz, 300 ms op", 10 * ms, 300 * ms, attribution.CollectiveConfident, ReasonResolvedInInterval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := trainingJob(8, tc.interval)
			for k := int64(0); k < j.duration/sec; k++ {
				j.collective("world", k, "all_reduce", rankList(0, 8), k*sec+300*ms, tc.op, false)
			}
			// Rises just after the launch, freed as the op ends.
			j.change(rankList(0, 8), 15*sec+302*ms, 15*sec+305*ms+tc.op, gib)
			results := Attribute(j.input(), mediumConfig(t), nil)
			if len(results) != 8 {
				t.Fatalf("%d results, want 8: %+v", len(results), results)
			}
			for _, r := range results {
				if r.Classification != tc.want || !hasCode(r, tc.code) {
					t.Errorf("rank %d: %s %v, want %s with %s", r.Rank, r.Classification, r.ReasonCodes, tc.want, tc.code)
				}
			}
		})
	}
}
