package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"fmt"
	"time"
)

// checkpoint_interval's allowed range: a checkpoint writes every changed
// job whole, so a shorter interval costs CPU and disk for little less loss;
// a longer one loses more than a job's idle timeout on a crash.
const (
	minCheckpointInterval = 100 * time.Millisecond
	maxCheckpointInterval = time.Hour
)

// validateStorage checks checkpoint_interval (used only with storage, but
// checked always, so that turning storage on does not reveal a bad value).
func (cfg *Config) validateStorage() []error {
	var errs []error
	if cfg.CheckpointInterval < minCheckpointInterval || cfg.CheckpointInterval > maxCheckpointInterval {
		errs = append(errs, fmt.Errorf("checkpoint_interval must be in [%s, %s], got %s", minCheckpointInterval, maxCheckpointInterval, cfg.CheckpointInterval))
	}
	return errs
}
