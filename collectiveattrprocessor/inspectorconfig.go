package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"errors"
	"fmt"
	"time"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
)

// InspectorConfig configures the NCCL Inspector records read from the logs
// pipeline (README, "NCCL Inspector logs"). They are joined to ranks by
// (host, pid), learned from the ranks' own telemetry with the keys
// identity.process_host and identity.pid and kept for identity_ttl.
type InspectorConfig struct {
	// Hold is how long (wall clock) a record whose host and pid no rank's
	// telemetry names yet waits for it; it is retried at each evaluation
	// and then counted as unjoinable.
	Hold time.Duration `mapstructure:"hold"`
	// MaxPending bounds the records waiting; the oldest gives way (counted
	// as unjoinable).
	MaxPending int `mapstructure:"max_pending"`
}

func defaultInspectorConfig() InspectorConfig {
	return InspectorConfig{Hold: 30 * time.Second, MaxPending: 65536}
}

func (cfg *Config) validateInspector() []error {
	var errs []error
	if cfg.NCCLInspector.Hold <= 0 {
		errs = append(errs, fmt.Errorf("nccl_inspector.hold must be positive, got %s", cfg.NCCLInspector.Hold))
	}
	if cfg.NCCLInspector.MaxPending < 1 {
		errs = append(errs, fmt.Errorf("nccl_inspector.max_pending must be at least 1, got %d", cfg.NCCLInspector.MaxPending))
	}
	for field, keys := range map[string][]string{"identity.process_host": cfg.Identity.ProcessHost, "identity.pid": cfg.Identity.PID} {
		if len(keys) == 0 {
			errs = append(errs, errors.New(field+" must name at least one key"))
		}
		for i, k := range keys {
			if k == "" {
				errs = append(errs, fmt.Errorf("%s[%d] must be a non-empty string", field, i))
			}
		}
	}
	return errs
}

// inspectorConfig is the converter's view of the Inspector settings, with
// the markers mode's engine reads.
func (cfg *Config) inspectorConfig(mode modeStrategy) ingest.InspectorConfig {
	return ingest.InspectorConfig{
		HostKeys:   cfg.Identity.ProcessHost,
		PIDKeys:    cfg.Identity.PID,
		Hold:       cfg.NCCLInspector.Hold,
		MaxPending: cfg.NCCLInspector.MaxPending,
		Markers:    mode.inspectorMarkers,
		CommRanks:  mode.inspectorCommRanks,
	}
}
