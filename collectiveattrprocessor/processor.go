package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
)

// Each signal's processor is a processorhelper processor (which reports the
// standard incoming and outgoing item counts) whose function reads the
// batch into the core and returns it unchanged: the helper hands it to the
// next consumer and returns that consumer's error. Reading comes first
// because the batch belongs to the next consumer once handed on (the batch
// processor, for one, moves its contents away); whatever the conversion
// thinks of an item, the item passes through.
//
// Results are not part of any batch: the core's evaluation loop sends them
// to the next consumers captured here (lifecycle), on its own schedule.

// capabilities: the processor reads its input and passes it on unchanged.
var capabilities = consumer.Capabilities{MutatesData: false}

// lifecycle is the Start/Shutdown half every signal's processor shares,
// and the next consumer results of its signal go to. Shutdown is safe
// without Start and more than once.
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

func (l *lifecycle) start(ctx context.Context, host component.Host) error {
	return l.core.start(ctx, host)
}

func (l *lifecycle) shutdown(ctx context.Context) error {
	l.once.Do(func() {
		l.err = l.core.shutdownSignal(ctx, l)
	})
	return l.err
}

func (l *lifecycle) options() []processorhelper.Option {
	return []processorhelper.Option{
		processorhelper.WithCapabilities(capabilities),
		processorhelper.WithStart(l.start),
		processorhelper.WithShutdown(l.shutdown),
	}
}

// register adds l to the core and gives the reference it took back when
// the processor cannot be built.
func (l *lifecycle) register(err error) error {
	if err != nil {
		if l.core.factory.release(l.core) {
			l.core.tel.tb.Shutdown()
		}
		return err
	}
	l.core.register(l)
	return nil
}

func newTracesProcessor(ctx context.Context, set processor.Settings, c *core, next consumer.Traces) (processor.Traces, error) {
	l := &lifecycle{core: c, signal: signalTraces, traces: next}
	p, err := processorhelper.NewTraces(ctx, set, c.cfg, next, func(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
		c.consumeTraces(ctx, td)
		return td, nil
	}, l.options()...)
	return p, l.register(err)
}

func newMetricsProcessor(ctx context.Context, set processor.Settings, c *core, next consumer.Metrics) (processor.Metrics, error) {
	l := &lifecycle{core: c, signal: signalMetrics, metrics: next}
	p, err := processorhelper.NewMetrics(ctx, set, c.cfg, next, func(ctx context.Context, md pmetric.Metrics) (pmetric.Metrics, error) {
		c.consumeMetrics(ctx, md)
		return md, nil
	}, l.options()...)
	return p, l.register(err)
}

func newLogsProcessor(ctx context.Context, set processor.Settings, c *core, next consumer.Logs) (processor.Logs, error) {
	l := &lifecycle{core: c, signal: signalLogs, logs: next}
	p, err := processorhelper.NewLogs(ctx, set, c.cfg, next, func(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
		c.consumeLogs(ctx, ld)
		return ld, nil
	}, l.options()...)
	return p, l.register(err)
}
