package quality

import (
	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

// EvidenceMode runs evidence mode in process (window.Stream, ResolveConfig with
// the preset and no overrides, Attribute), as `collectiveattr attribute --mode
// evidence --preset P` does.
func EvidenceMode(events []telemetry.Event, preset string) ([]jobsim.QualityResult, error) {
	return runEvidence(events, preset, nil)
}

// EvidenceModeWith is EvidenceMode with evidence settings over the preset's
// (the CLI's --evidence), e.g. {"approximate_tolerance_ns": 1e9}.
func EvidenceModeWith(settings map[string]any) Mode {
	return func(events []telemetry.Event, preset string) ([]jobsim.QualityResult, error) {
		return runEvidence(events, preset, settings)
	}
}

func runEvidence(events []telemetry.Event, preset string, settings map[string]any) ([]jobsim.QualityResult, error) {
	if len(events) == 0 {
		return nil, nil
	}
	cfg, err := evidence.ResolveConfig(preset, nil, settings)
	if err != nil {
		return nil, err
	}
	w := window.NewStream(window.EvidenceMode, false)
	w.AddEvents(events)
	var sc window.Scratch
	var es window.EvidenceScratch
	snap := w.Job().EvidenceSnapshot(&sc, &es)
	results := evidence.Attribute(&snap.Input, cfg, nil)
	out := make([]jobsim.QualityResult, len(results))
	for i := range results {
		r := &results[i]
		out[i] = jobsim.QualityResult{Rank: r.Rank, StartNs: r.IntervalStartNs, EndNs: r.EndNs(),
			Classification: r.Classification, Confidence: r.Confidence, Kind: r.Kind}
	}
	return out, nil
}
