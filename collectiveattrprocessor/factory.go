package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
)

// NewFactory returns the factory of the collectiveattr processor.
func NewFactory() processor.Factory {
	return newFactory(defaultClock()).processorFactory()
}

// factory holds one core per component ID. The service creates one
// processor per pipeline that names a component, and hands each of those
// Create calls the same *Config: keying on the pointer gives traces,
// metrics and logs pipelines of one `collectiveattr/<name>` a single shared
// state (processor-contract §6). An entry lives from the first Create to
// the last Shutdown.
type factory struct {
	clock clock
	mu    sync.Mutex
	cores map[*Config]*core
}

func newFactory(clk clock) *factory {
	return &factory{clock: clk, cores: map[*Config]*core{}}
}

func (f *factory) processorFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithTraces(f.createTraces, metadata.TracesStability),
		processor.WithMetrics(f.createMetrics, metadata.MetricsStability),
		processor.WithLogs(f.createLogs, metadata.LogsStability),
	)
}

// acquire returns the core of cfg, creating it on first use, and takes a
// reference that the caller gives back with release.
func (f *factory) acquire(cfg *Config, set processor.Settings) (*core, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.cores[cfg]; ok {
		c.refs++
		return c, nil
	}
	c, err := newCore(cfg, set, f.clock)
	if err != nil {
		return nil, err
	}
	c.refs = 1
	c.factory = f
	f.cores[cfg] = c
	return c, nil
}

// release gives back one reference; it reports whether it was the last, in
// which case the core is no longer reachable by new Create calls.
func (f *factory) release(c *core) (last bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c.refs--
	if c.refs > 0 {
		return false
	}
	if f.cores[c.cfg] == c {
		delete(f.cores, c.cfg)
	}
	return true
}

func (f *factory) createTraces(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	c, err := f.acquire(cfg.(*Config), set)
	if err != nil {
		return nil, err
	}
	return newTracesProcessor(ctx, set, c, next)
}

func (f *factory) createMetrics(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Metrics) (processor.Metrics, error) {
	c, err := f.acquire(cfg.(*Config), set)
	if err != nil {
		return nil, err
	}
	return newMetricsProcessor(ctx, set, c, next)
}

func (f *factory) createLogs(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	c, err := f.acquire(cfg.(*Config), set)
	if err != nil {
		return nil, err
	}
	return newLogsProcessor(ctx, set, c, next)
}
