package quality

import (
	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// EvidenceMode runs evidence mode in process (evidence.Builder, ResolveConfig with
// the preset and no overrides, Attribute), as `collectiveattr attribute --mode
// evidence --preset P` does.
func EvidenceMode(events []telemetry.Event, preset string) ([]jobsim.QualityResult, error) {
	if len(events) == 0 {
		return nil, nil
	}
	cfg, err := evidence.ResolveConfig(preset, nil, nil)
	if err != nil {
		return nil, err
	}
	b := evidence.NewBuilder()
	for i := range events {
		b.Add(&events[i])
	}
	results := evidence.Attribute(b.Input(), cfg, nil)
	out := make([]jobsim.QualityResult, len(results))
	for i := range results {
		r := &results[i]
		out[i] = jobsim.QualityResult{Rank: r.Rank, StartNs: r.IntervalStartNs, EndNs: r.EndNs(),
			Classification: r.Classification, Confidence: r.Confidence, Kind: r.Kind}
	}
	return out, nil
}
