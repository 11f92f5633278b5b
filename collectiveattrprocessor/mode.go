package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"fmt"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
)

// AttributionMode selects the attribution engine (README "Attribution
// modes").
type AttributionMode string

const (
	// ModeReference is stormlog's heuristic, bit-exact (the default).
	ModeReference AttributionMode = attribution.ModeReference
	// ModeEvidence is evidence mode (docs/evidence-mode.md): it reads the
	// markers' collective identity and NCCL's memory accounting.
	ModeEvidence AttributionMode = attribution.ModeEvidence
)

// validateMode checks mode and resolves the evidence configuration. The
// evidence keys are validated in either mode, so that a typo is caught
// before the mode is switched.
func (cfg *Config) validateMode() error {
	if cfg.Mode != ModeReference && cfg.Mode != ModeEvidence {
		return fmt.Errorf("mode must be one of reference, evidence, got %q", cfg.Mode)
	}
	_, err := cfg.evidenceConfig()
	return err
}

// evidenceConfig is the engine configuration of evidence mode: the preset
// and overrides resolved as the reference resolves them, and the
// `evidence` keys over the preset's evidence defaults.
func (cfg *Config) evidenceConfig() (evidence.Config, error) {
	return evidence.ResolveConfig(cfg.Preset, cfg.Overrides, cfg.Evidence)
}
