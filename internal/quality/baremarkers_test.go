package quality

import (
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// bareAllReduces is mode on a job whose all_reduce markers are bare
// timestamps (no nccl.* identity or duration), as DDP's gradient
// all_reduces are when the reducer issues them from C++, where no Python
// wrapper names them; its other collectives keep their identity.
func bareAllReduces(mode Mode) Mode {
	return func(events []telemetry.Event, preset string) ([]jobsim.QualityResult, error) {
		out := make([]telemetry.Event, len(events))
		copy(out, events)
		for i := range out {
			e := &out[i]
			if e.EventType != "nccl:all_reduce" {
				continue
			}
			md := map[string]any{}
			for k, v := range e.Metadata {
				if !strings.HasPrefix(k, "nccl.") {
					md[k] = v
				}
			}
			e.Metadata = md
		}
		return mode(out, preset)
	}
}

// bareMarkerSkewGoals: spikes at bare all_reduces on hosts whose clocks are
// off (skew) or drift (drift) are found at every preset: the hosts' skew,
// estimated from the collectives that carry an identity, is taken out of
// wall-clock synchrony (docs/evidence-mode.md §7.5; without it, recall
// 0.13 to 0.37 at the low and medium presets).
var bareMarkerSkewGoals = []Goal{
	atLeast(Recall, 0.95, "world spikes at bare markers, every preset", Rows{}),
	atLeast(Precision, 0.95, "claims right", Rows{}),
	atMost(DecoysConfident, 0.05, "decoys confident", Rows{}),
}

func TestEvidenceModeBareMarkersOnSkewedClocks(t *testing.T) {
	skipUnderRace(t)
	families := []string{"drift", "skew"}
	tab := evaluate(t, bareAllReduces(EvidenceMode),
		Plan{Shape: "default", Families: families, Seeds: []int64{1, 2, 3}, Presets: allPresets, NCCLStats: []bool{false, true}})
	reportFailures(t, tab, Check(tab, bareMarkerSkewGoals))
}
