package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/boltfile"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
)

// Storage faults (storage_faults, by fault).
const (
	faultDamagedFile = metadata.AttributeStorageFaultDamagedFile
	faultOpenFailed  = metadata.AttributeStorageFaultOpenFailed
	faultFileLost    = metadata.AttributeStorageFaultFileLost
)

// connect checks the storage's file, gets the client and restores the jobs
// the storage holds. A damaged file is moved aside (kept for inspection)
// and the processor goes on with a new, empty one; when the file cannot be
// checked or moved, or the extension gives no client, persistence is off
// until a later checkpoint connects. It reports whether the client is
// open. Called with evalMu held.
func (c *core) connect(ctx context.Context) bool {
	cp := c.ckpt
	if cp.file != "" {
		if err := boltfile.Check(cp.file); err != nil {
			if !errors.Is(err, boltfile.ErrDamaged) {
				cp.unavailable(ctx, faultOpenFailed, fmt.Sprintf("cannot read storage file %s: %v", cp.file, err),
					"make the file readable by the collector, or remove it")
				return false
			}
			aside := fmt.Sprintf("%s.damaged-%s", cp.file, time.Now().UTC().Format("20060102T150405Z"))
			if mvErr := os.Rename(cp.file, aside); mvErr != nil {
				cp.unavailable(ctx, faultDamagedFile, fmt.Sprintf("storage file %s is damaged (%v) and cannot be moved aside (%v)", cp.file, err, mvErr),
					"remove the file or make its directory writable")
				return false
			}
			cp.count(ctx, faultDamagedFile)
			cp.logger.Error("collectiveattr: storage file "+cp.file+" is damaged; moved it aside to "+aside+
				" and starting with an empty store: the jobs it held are lost. Inspect the moved file, then delete it.",
				zap.Error(err))
		}
	}
	client, err := cp.ext.GetClient(ctx, component.KindProcessor, c.id, "")
	if err != nil {
		what := "cannot open the storage"
		if cp.file != "" {
			what += " file " + cp.file
		}
		cp.unavailable(ctx, faultOpenFailed, fmt.Sprintf("%s: %v", what, err),
			"check that its directory exists, is writable and has free space")
		return false
	}
	cp.client = client
	if cp.down {
		cp.down = false
		cp.logger.Info("collectiveattr: storage available again; checkpoints resume", zap.String("file", cp.file))
	}
	c.restore(ctx)
	// What the processor holds now is not in this storage yet: the live
	// jobs, and the final checkpoints of finalised jobs.
	c.mu.Lock()
	c.store.EachJob(c.store.MarkUnsaved)
	c.mu.Unlock()
	for _, f := range cp.finals {
		if f.value != nil {
			f.written = false
		}
	}
	return true
}

// storageUsable reports whether the client is open, connecting when it is
// not; an open client whose file disappeared (its directory removed, the
// file deleted: the client writes on into a file nobody can reopen) is
// reopened. Called with evalMu held.
func (c *core) storageUsable(ctx context.Context) bool {
	cp := c.ckpt
	if cp.client != nil && cp.file != "" {
		if _, err := os.Stat(cp.file); errors.Is(err, os.ErrNotExist) {
			cp.count(ctx, faultFileLost)
			cp.logger.Error("collectiveattr: storage file " + cp.file + " disappeared under the running collector" +
				" (its directory removed or the file deleted): the checkpoints written since are lost; reopening it." +
				" Keep the storage directory in place while the collector runs.")
			cp.disconnect(ctx)
			cp.saved = map[string]string{}
		}
	}
	if cp.client != nil {
		return true
	}
	return c.connect(ctx)
}

// unavailable counts fault and logs, the first time in a row only, that the
// storage cannot be used: persistence is off until a checkpoint connects.
func (cp *checkpointer) unavailable(ctx context.Context, fault metadata.AttributeStorageFault, what, todo string) {
	cp.count(ctx, fault)
	if cp.down {
		cp.logger.Debug("collectiveattr: storage still unavailable", zap.String("reason", what))
		return
	}
	cp.down = true
	cp.logger.Error("collectiveattr: " + what + "; running without persistence (jobs are not checkpointed, a restart loses them)" +
		" and trying again at each checkpoint_interval: " + todo)
}

func (cp *checkpointer) count(ctx context.Context, fault metadata.AttributeStorageFault) {
	cp.faults.Add(ctx, 1, metric.WithAttributes(attribute.String("fault", fault.String())))
}

// disconnect closes the client, if open.
func (cp *checkpointer) disconnect(ctx context.Context) {
	if cp.client == nil {
		return
	}
	if err := cp.client.Close(ctx); err != nil {
		cp.logger.Warn("collectiveattr: closing the storage client", zap.Error(err))
	}
	cp.client = nil
}
