package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
)

// The storage layout: one key per job (jobKeyPrefix and a hash of its id,
// as job ids may be long or hold any byte) holding the job's checkpoint
// (store.AppendCheckpoint), and indexKey listing the job keys, so that a
// restore finds them with Get alone (a storage client need not be able to
// walk its keys).
const (
	indexKey     = "index"
	indexHeader  = "collectiveattr checkpoint index v1\n"
	jobKeyPrefix = "job/"
)

// jobKey is the storage key of a job's checkpoint.
func jobKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return jobKeyPrefix + hex.EncodeToString(sum[:16])
}

// legacyJobPrefix starts a job checkpoint stored bare, as builds before the
// envelope (envelope.go) wrote them: the payload format's own magic.
const legacyJobPrefix = "CAJ\x00"

// checkpointer keeps the core's jobs in a storage extension. Its methods
// are called with evalMu held (the evaluation loop, Start and Shutdown), so
// a checkpoint never races an evaluation that forgets a job.
//
// The storage only ever degrades persistence: a damaged file is moved aside
// and the processor goes on with an empty store; a client that cannot be
// had (read-only or full directory, an unreadable file) leaves the
// processor running without persistence, and each checkpoint tries again;
// a file that disappears under the running processor is noticed and
// reopened (storage_fault.go).
type checkpointer struct {
	ext storage.Extension
	// file is the extension's file for this processor ("" when the
	// extension is not file_storage): checked before it is opened, and
	// watched while it is.
	file string
	// client is nil while the storage is unavailable.
	client storage.Client
	// down says the storage is unavailable and that was logged.
	down bool
	// saved are the job keys the storage holds (as last written to its
	// index), by job id.
	saved map[string]string
	// sizes are the jobs' last checkpoint sizes, by job id.
	sizes map[string]int
	// finals are the finalised jobs whose results are not yet accepted
	// downstream (delivery.go), by job id.
	finals map[string]*finalJob
	acks   ackSet
	// failures counts checkpoints not restored or not written, by
	// operation (restore, write): a storage fault or a corrupt or
	// incompatible checkpoint is never fatal.
	failures metric.Int64Counter
	// faults counts the storage's own faults, by fault.
	faults metric.Int64Counter
	logger *zap.Logger
}

// openStorage finds the storage extension named by storage: (missing or
// of the wrong kind: a configuration error) and connects to it, which
// restores the jobs it holds. That the storage cannot be used is not an
// error of Start (connect).
func (c *core) openStorage(ctx context.Context, host component.Host) error {
	if c.cfg.Storage == nil {
		return nil
	}
	ext, ok := host.GetExtensions()[*c.cfg.Storage]
	if !ok {
		return fmt.Errorf("storage: extension %q not found", c.cfg.Storage)
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return fmt.Errorf("storage: extension %q is not a storage extension", c.cfg.Storage)
	}
	c.ckpt = &checkpointer{
		ext:      se,
		file:     storageFile(ext, c.id),
		saved:    map[string]string{},
		sizes:    map[string]int{},
		finals:   map[string]*finalJob{},
		failures: c.tel.tb.ProcessorCollectiveattrCheckpointFailures,
		faults:   c.tel.tb.ProcessorCollectiveattrStorageFaults,
		logger:   c.logger,
	}
	c.connect(ctx)
	return nil
}

// restore adds the jobs of the storage's index to the store, but for those
// it already tracks (a storage that became available while the processor
// ran: the live state is newer and overwrites them). A job whose checkpoint
// is marked final is finalised again at the next round (delivery.go).
func (c *core) restore(ctx context.Context) {
	cp := c.ckpt
	keys, err := readIndex(ctx, cp.client)
	if err != nil {
		cp.failed(ctx, metadata.AttributeCheckpointOperationRestore, "reading the checkpoint index", "no job is restored", err)
		return
	}
	live := map[string]bool{}
	c.mu.Lock()
	c.store.EachJob(func(id string) { live[jobKey(id)] = true })
	c.mu.Unlock()
	restored, events, legacy := 0, 0, 0
	var drop []string
	for _, key := range keys {
		if live[key] {
			continue
		}
		value, err := cp.client.Get(ctx, key)
		if err == nil && value == nil {
			err = errors.New("listed in the index but not stored")
		}
		var (
			data  []byte
			flags byte
			old   bool
		)
		if err == nil {
			data, flags, old, err = openEnvelope(value, legacyJobPrefix)
		}
		if err != nil {
			cp.failed(ctx, metadata.AttributeCheckpointOperationRestore, "reading checkpoint "+key, "the checkpoint is dropped", err)
			drop = append(drop, key)
			continue
		}
		c.mu.Lock()
		job, err := c.store.Restore(data, c.clock.now())
		if err == nil {
			cp.saved[job.ID()] = key
			events += job.Events()
			c.ledgers.restored(job.ID(), job.NewestNs())
			if flags&flagFinal != 0 {
				c.store.MarkFinal(job.ID())
			}
			if old {
				// Rewritten in an envelope at the next checkpoint.
				c.store.MarkUnsaved(job.ID())
				legacy++
			}
		}
		c.publishSizes()
		c.mu.Unlock()
		if err != nil {
			cp.failed(ctx, metadata.AttributeCheckpointOperationRestore, "restoring checkpoint "+key, "the checkpoint is dropped", err)
			drop = append(drop, key)
			continue
		}
		restored++
	}
	if len(drop) > 0 {
		ops := make([]*storage.Operation, 0, len(drop)+1)
		for _, key := range drop {
			ops = append(ops, storage.DeleteOperation(key))
		}
		ops = append(ops, storage.SetOperation(indexKey, cp.index()))
		if err := cp.client.Batch(ctx, ops...); err != nil {
			cp.failed(ctx, metadata.AttributeCheckpointOperationWrite, "dropping unusable checkpoints", "retried at the next restart", err)
		}
	}
	if restored > 0 || len(drop) > 0 {
		c.logger.Info("collectiveattr: restored jobs from storage", zap.Int("jobs", restored), zap.Int("events", events),
			zap.Int("unusable", len(drop)), zap.Int("written_before_integrity_checks", legacy))
	}
}

// readIndex returns the job keys of the storage's index.
func readIndex(ctx context.Context, client storage.Client) ([]string, error) {
	value, err := client.Get(ctx, indexKey)
	if err != nil || value == nil {
		return nil, err
	}
	index, _, _, err := openEnvelope(value, indexHeader)
	if err != nil {
		return nil, err
	}
	return parseIndex(index)
}

// checkpoint writes the jobs that changed since the last checkpoint and the
// finalised jobs' final checkpoints, and deletes the checkpoints of jobs no
// longer tracked (forgotten, or finalised with their results accepted
// downstream), in one batch. The jobs are encoded under mu, written outside
// it. A storage that is unavailable is tried again first. Called with
// evalMu held.
func (c *core) checkpoint(ctx context.Context) {
	cp := c.ckpt
	if cp == nil || !c.storageUsable(ctx) {
		return
	}
	var (
		ops     []*storage.Operation
		written []string
	)
	c.mu.Lock()
	for _, job := range c.store.Unsaved() {
		key := jobKey(job.ID())
		// Sized from the job's previous checkpoint: growing a buffer of
		// megabytes from nothing costs more than encoding into it.
		last := cp.sizes[job.ID()]
		data := sealEnvelope(c.store.AppendCheckpoint(beginEnvelope(make([]byte, 0, last+last/8+512)), job), 0)
		cp.sizes[job.ID()] = len(data)
		ops = append(ops, storage.SetOperation(key, data))
		written = append(written, job.ID())
		cp.saved[job.ID()] = key
		// The job came back: its live checkpoint replaces a final one.
		delete(cp.finals, job.ID())
	}
	var gone []string
	for id := range cp.saved {
		if c.store.Job(id) == nil && cp.finals[id] == nil {
			gone = append(gone, id)
		}
	}
	ops, finalsWritten, gone := c.settleFinals(ops, gone)
	c.mu.Unlock()
	if len(ops) == 0 && len(gone) == 0 {
		return
	}
	for _, id := range gone {
		ops = append(ops, storage.DeleteOperation(cp.saved[id]))
		delete(cp.saved, id)
		delete(cp.sizes, id)
	}
	ops = append(ops, storage.SetOperation(indexKey, seal(cp.index(), 0)))
	if err := cp.client.Batch(ctx, ops...); err != nil {
		cp.failed(ctx, metadata.AttributeCheckpointOperationWrite, "writing checkpoints", "retried at the next checkpoint", err)
		c.mu.Lock()
		for _, id := range written {
			c.store.MarkUnsaved(id)
		}
		c.mu.Unlock()
		for _, f := range finalsWritten {
			f.written = false
		}
		return
	}
	for _, f := range finalsWritten {
		f.value = nil
	}
}

// closeStorage writes a last checkpoint and closes the client.
func (c *core) closeStorage(ctx context.Context) {
	if c.ckpt == nil {
		return
	}
	c.evalMu.Lock()
	defer c.evalMu.Unlock()
	c.checkpoint(ctx)
	c.ckpt.disconnect(ctx)
	c.ckpt = nil
}

// failed counts and logs a checkpoint not restored or not written; then
// says what becomes of it.
func (cp *checkpointer) failed(ctx context.Context, op metadata.AttributeCheckpointOperation, what, then string, err error) {
	cp.failures.Add(ctx, 1, metric.WithAttributes(attribute.String("operation", op.String())))
	cp.logger.Warn("collectiveattr: "+what+" failed; "+then, zap.String("operation", op.String()), zap.Error(err))
}

// index is the index of the saved job keys, sorted.
func (cp *checkpointer) index() []byte {
	keys := make([]string, 0, len(cp.saved))
	for _, k := range cp.saved {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return []byte(indexHeader + strings.Join(keys, "\n"))
}

// parseIndex returns the job keys of an index (none when there is no index).
func parseIndex(data []byte) ([]string, error) {
	if data == nil {
		return nil, nil
	}
	body, ok := strings.CutPrefix(string(data), indexHeader)
	if !ok {
		return nil, errors.New("not a checkpoint index of a version this build reads")
	}
	if body == "" {
		return nil, nil
	}
	keys := strings.Split(body, "\n")
	for _, k := range keys {
		if !strings.HasPrefix(k, jobKeyPrefix) {
			return nil, fmt.Errorf("index lists %q, not a job key", k)
		}
	}
	return keys, nil
}
