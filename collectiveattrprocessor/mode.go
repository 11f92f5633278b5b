package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"fmt"
	"time"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/store"
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

// modeConfig is the resolved evidence configuration in evidence mode, nil
// in the reference mode.
func (cfg *Config) modeConfig() (*evidence.Config, error) {
	if cfg.Mode != ModeEvidence {
		return nil, nil
	}
	ec, err := cfg.evidenceConfig()
	if err != nil {
		return nil, err
	}
	return &ec, nil
}

// jobSnapshot is a job's evaluation input in the core's mode.
type jobSnapshot struct {
	ref store.Snapshot
	ev  *store.EvidenceSnapshot
}

// snapshot reads job's buffers as the mode's engine takes them.
func (c *core) snapshot(job *store.Job) jobSnapshot {
	if c.evidence != nil {
		ev := c.store.EvidenceSnapshot(job, &c.scratch, &c.evScratch)
		return jobSnapshot{ev: &ev}
	}
	return jobSnapshot{ref: c.store.Snapshot(job, &c.scratch)}
}

// attribute runs the mode's engine.
func (s *jobSnapshot) attribute(c *core) []attribution.Result {
	if s.ev != nil {
		return evidence.Attribute(&s.ev.Input, *c.evidence, s.ev.Resolver)
	}
	return attribution.AttributeColumns(s.ref.Input, c.attrCfg, s.ref.Resolver)
}

// settleDelay is how far past a result's interval end the job's newest
// event must be before on_settle emits it. In evidence mode it is at least
// evidence.baseline_window_ns: the engine tells a persistent step from a
// transient spike by the level over that span after the change, so a rise
// emitted sooner could be a step reported as a transient spike, and the
// step, which starts at the same onset, would then never be emitted.
func (c *core) settleDelay() time.Duration {
	if c.evidence != nil {
		return max(c.cfg.SettleDelay, time.Duration(c.evidence.Evidence.BaselineWindowNs))
	}
	return c.cfg.SettleDelay
}
