package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// lifecycle is the Start/Shutdown half every signal's processor shares.
// Shutdown is safe without Start and more than once.
type lifecycle struct {
	core   *core
	signal signal
	once   sync.Once
	err    error
	// The next consumer of this processor (the one of its signal is set).
	traces  consumer.Traces
	metrics consumer.Metrics
	logs    consumer.Logs
}

func (l *lifecycle) Start(ctx context.Context, _ component.Host) error {
	l.core.start(ctx)
	return nil
}

func (l *lifecycle) Shutdown(ctx context.Context) error {
	l.once.Do(func() {
		l.err = l.core.shutdownSignal(ctx, l)
	})
	return l.err
}

// Capabilities: the processor reads its input and passes it on unchanged.
func (*lifecycle) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// Each Consume converts the batch into the core's buffers and then hands it,
// unchanged, to the next consumer, returning that consumer's error. Reading
// comes first because the batch belongs to the next consumer once handed on
// (the batch processor, for one, moves its contents away); whatever the
// conversion thinks of an item, the item passes through.

type tracesProcessor struct {
	lifecycle
	next consumer.Traces
}

func newTracesProcessor(c *core, next consumer.Traces) *tracesProcessor {
	p := &tracesProcessor{lifecycle: lifecycle{core: c, signal: signalTraces, traces: next}, next: next}
	c.register(&p.lifecycle)
	return p
}

func (p *tracesProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	p.core.consumeTraces(ctx, td)
	return p.next.ConsumeTraces(ctx, td)
}

type metricsProcessor struct {
	lifecycle
	next consumer.Metrics
}

func newMetricsProcessor(c *core, next consumer.Metrics) *metricsProcessor {
	p := &metricsProcessor{lifecycle: lifecycle{core: c, signal: signalMetrics, metrics: next}, next: next}
	c.register(&p.lifecycle)
	return p
}

func (p *metricsProcessor) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	p.core.consumeMetrics(ctx, md)
	return p.next.ConsumeMetrics(ctx, md)
}

type logsProcessor struct {
	lifecycle
	next consumer.Logs
}

func newLogsProcessor(c *core, next consumer.Logs) *logsProcessor {
	p := &logsProcessor{lifecycle: lifecycle{core: c, signal: signalLogs, logs: next}, next: next}
	c.register(&p.lifecycle)
	return p
}

func (p *logsProcessor) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	p.core.consumeLogs(ctx, ld)
	return p.next.ConsumeLogs(ctx, ld)
}
