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

// checkpointer keeps the core's jobs in a storage extension. Its methods
// are called with evalMu held (the evaluation loop, Start and Shutdown), so
// a checkpoint never races an evaluation that forgets a job.
type checkpointer struct {
	client storage.Client
	// saved are the job keys the storage holds (as last written to its
	// index), by job id.
	saved map[string]string
	// sizes are the jobs' last checkpoint sizes, by job id.
	sizes map[string]int
	// failures counts checkpoints not restored or not written, by
	// operation (restore, write): a storage fault or a corrupt or
	// incompatible checkpoint is never fatal.
	failures metric.Int64Counter
	logger   *zap.Logger
}

func newCheckpointCounter(set component.TelemetrySettings) (metric.Int64Counter, error) {
	return metadata.Meter(set).Int64Counter(
		"otelcol_processor_collectiveattr_checkpoint_failures",
		metric.WithDescription("Number of job checkpoints not restored (corrupt, incompatible, over a limit) or not written (storage error), by operation (restore, write)."),
		metric.WithUnit("{checkpoints}"),
	)
}

// openStorage gets the core's storage client from the extension named by
// storage: and restores the jobs it holds. A missing or wrong extension is
// a configuration error; a job that cannot be restored is logged, counted
// and dropped from the storage.
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
	client, err := se.GetClient(ctx, component.KindProcessor, c.id, "")
	if err != nil {
		return fmt.Errorf("storage: extension %q: %w", c.cfg.Storage, err)
	}
	c.ckpt = &checkpointer{client: client, saved: map[string]string{}, sizes: map[string]int{}, failures: c.ckptFailures, logger: c.logger}
	c.restore(ctx)
	return nil
}

// restore adds the jobs of the storage's index to the store.
func (c *core) restore(ctx context.Context) {
	cp := c.ckpt
	index, err := cp.client.Get(ctx, indexKey)
	if err != nil {
		cp.failed(ctx, "restore", "reading the checkpoint index", err)
		return
	}
	keys, err := parseIndex(index)
	if err != nil {
		cp.failed(ctx, "restore", "reading the checkpoint index", err)
		return
	}
	restored, events := 0, 0
	var drop []string
	for _, key := range keys {
		data, err := cp.client.Get(ctx, key)
		if err == nil && data == nil {
			err = errors.New("listed in the index but not stored")
		}
		if err != nil {
			cp.failed(ctx, "restore", "reading checkpoint "+key, err)
			drop = append(drop, key)
			continue
		}
		c.mu.Lock()
		job, err := c.store.Restore(data, c.clock.now())
		if err == nil {
			cp.saved[job.ID()] = key
			events += job.Events()
		}
		c.publishSizes()
		c.mu.Unlock()
		if err != nil {
			cp.failed(ctx, "restore", "restoring checkpoint "+key, err)
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
			cp.failed(ctx, "write", "dropping unusable checkpoints", err)
		}
	}
	if restored > 0 || len(drop) > 0 {
		c.logger.Info("collectiveattr: restored jobs from storage", zap.Int("jobs", restored), zap.Int("events", events), zap.Int("unusable", len(drop)))
	}
}

// checkpoint writes the jobs that changed since the last checkpoint and
// deletes the checkpoints of jobs no longer tracked (finalised or
// forgotten), in one batch. The jobs are encoded under mu, written outside
// it. Called with evalMu held.
func (c *core) checkpoint(ctx context.Context) {
	cp := c.ckpt
	if cp == nil {
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
		data := c.store.AppendCheckpoint(make([]byte, 0, last+last/8+512), job)
		cp.sizes[job.ID()] = len(data)
		ops = append(ops, storage.SetOperation(key, data))
		written = append(written, job.ID())
		cp.saved[job.ID()] = key
	}
	var gone []string
	for id := range cp.saved {
		if c.store.Job(id) == nil {
			gone = append(gone, id)
		}
	}
	c.mu.Unlock()
	if len(ops) == 0 && len(gone) == 0 {
		return
	}
	for _, id := range gone {
		ops = append(ops, storage.DeleteOperation(cp.saved[id]))
		delete(cp.saved, id)
		delete(cp.sizes, id)
	}
	ops = append(ops, storage.SetOperation(indexKey, cp.index()))
	if err := cp.client.Batch(ctx, ops...); err != nil {
		cp.failed(ctx, "write", "writing checkpoints", err)
		// Written again at the next checkpoint.
		c.mu.Lock()
		for _, id := range written {
			c.store.MarkUnsaved(id)
		}
		c.mu.Unlock()
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
	if err := c.ckpt.client.Close(ctx); err != nil {
		c.logger.Warn("collectiveattr: closing the storage client", zap.Error(err))
	}
	c.ckpt = nil
}

func (cp *checkpointer) failed(ctx context.Context, op, what string, err error) {
	cp.failures.Add(ctx, 1, metric.WithAttributes(attribute.String("operation", op)))
	cp.logger.Warn("collectiveattr: "+what+" failed; the job is skipped", zap.String("operation", op), zap.Error(err))
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
