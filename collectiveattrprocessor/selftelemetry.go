package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/store"
)

// signal is a pipeline signal; it indexes per-signal state.
type signal int

const (
	signalTraces signal = iota
	signalMetrics
	signalLogs
	numSignals
)

func (s signal) String() string {
	return [...]metadata.AttributeSignal{
		metadata.AttributeSignalTraces, metadata.AttributeSignalMetrics, metadata.AttributeSignalLogs,
	}[s].String()
}

// skipReasons are the self-telemetry reasons, in the order of their index.
var skipReasons = [...]ingest.SkipReason{
	ingest.SkipNoIdentity,
	ingest.SkipInvalidValue,
	ingest.SkipStale,
	ingest.SkipOverLimit,
	ingest.SkipUnjoinable,
	ingest.SkipDuplicate,
	ingest.SkipOrphaned,
	ingest.SkipFuture,
	ingest.SkipAmbiguousDevice,
	ingest.SkipSharedDevice,
	ingest.SkipMIGUnmapped,
	ingest.SkipRankConflict,
}

const numReasons = len(skipReasons)

func reasonIndex(r ingest.SkipReason) int {
	for i, x := range skipReasons {
		if x == r {
			return i
		}
	}
	return 1 // an unknown reason from the converter is an invalid value
}

// selfTelemetry records the otelcol_processor_collectiveattr_* metrics. The
// attribute sets are built once so that recording allocates nothing.
type selfTelemetry struct {
	tb *metadata.TelemetryBuilder

	converted      [numSignals]metric.AddOption
	skipped        [numSignals][numReasons]metric.AddOption
	evicted        [store.NumBounds]metric.AddOption
	emitted        map[string]metric.AddOption
	emitFailures   [numSignals][numEmitFailures]metric.AddOption
	ledgerFlags    [len(ledgerFlagCounts{})]metric.AddOption
	jobs, ranks    atomic.Int64
	eventsBuffered atomic.Int64
	// phaseSpansWaiting is the sum of the ranks' phaseWaiting after each
	// evaluation round.
	phaseSpansWaiting atomic.Int64
	inspector         inspectorTelemetry
}

func newSelfTelemetry(tb *metadata.TelemetryBuilder) (*selfTelemetry, error) {
	t := &selfTelemetry{tb: tb, emitted: map[string]metric.AddOption{}}
	for s := range numSignals {
		sig := attribute.String("signal", s.String())
		t.converted[s] = metric.WithAttributeSet(attribute.NewSet(sig))
		for f := range numEmitFailures {
			t.emitFailures[s][f] = metric.WithAttributeSet(attribute.NewSet(sig, attribute.String("reason", f.String())))
		}
		for i, r := range skipReasons {
			t.skipped[s][i] = metric.WithAttributeSet(attribute.NewSet(sig, attribute.String("reason", string(r))))
		}
	}
	for b := range store.NumBounds {
		t.evicted[b] = metric.WithAttributeSet(attribute.NewSet(attribute.String("bound", b.String())))
	}
	for i, f := range []metadata.AttributeLedgerFlag{metadata.AttributeLedgerFlagAccountingAboveHidden, metadata.AttributeLedgerFlagNegativeHidden} {
		t.ledgerFlags[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("flag", f.String())))
	}
	for _, c := range emittedClassifications() {
		t.emitted[c] = metric.WithAttributeSet(attribute.NewSet(attribute.String("classification", c)))
	}
	observe := func(v *atomic.Int64) metric.Int64Callback {
		return func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(v.Load())
			return nil
		}
	}
	if err := tb.RegisterProcessorCollectiveattrJobsTrackedCallback(observe(&t.jobs)); err != nil {
		return nil, err
	}
	if err := tb.RegisterProcessorCollectiveattrRanksTrackedCallback(observe(&t.ranks)); err != nil {
		return nil, err
	}
	if err := tb.RegisterProcessorCollectiveattrEventsBufferedCallback(observe(&t.eventsBuffered)); err != nil {
		return nil, err
	}
	if err := tb.RegisterProcessorCollectiveattrPhaseSpansWaitingCallback(observe(&t.phaseSpansWaiting)); err != nil {
		return nil, err
	}
	if err := t.inspector.register(tb); err != nil {
		return nil, err
	}
	return t, nil
}

// recordLimits records the configured bounds, once at Start.
func (t *selfTelemetry) recordLimits(ctx context.Context, l LimitsConfig) {
	t.tb.ProcessorCollectiveattrJobsLimit.Record(ctx, int64(l.MaxJobs))
	t.tb.ProcessorCollectiveattrRanksPerJobLimit.Record(ctx, int64(l.MaxRanksPerJob))
	t.tb.ProcessorCollectiveattrEventsPerRankLimit.Record(ctx, int64(l.MaxEventsPerRank))
}

// batchCounts are one Consume call's conversion counts, added to the
// counters once per call instead of once per item.
type batchCounts struct {
	converted int64
	skipped   [numReasons]int64
	evicted   [store.NumBounds]int64
	// hiddenDropped counts gpu.memory.hidden points past
	// maxHiddenPointsPerTick.
	hiddenDropped int64
	// worldSizesIgnored counts items whose declared world size was above
	// limits.max_ranks_per_job (ingest.Config.MaxWorldSize).
	worldSizesIgnored int64
}

func (t *selfTelemetry) addBatch(ctx context.Context, s signal, b *batchCounts) {
	if b.converted > 0 {
		t.tb.ProcessorCollectiveattrItemsConverted.Add(ctx, b.converted, t.converted[s])
	}
	for i, n := range b.skipped {
		if n > 0 {
			t.tb.ProcessorCollectiveattrItemsSkipped.Add(ctx, n, t.skipped[s][i])
		}
	}
	t.addEvicted(ctx, b.evicted)
	if b.hiddenDropped > 0 {
		t.tb.ProcessorCollectiveattrHiddenPointsDropped.Add(ctx, b.hiddenDropped)
	}
	if b.worldSizesIgnored > 0 {
		t.tb.ProcessorCollectiveattrWorldSizesIgnored.Add(ctx, b.worldSizesIgnored)
	}
}

func (t *selfTelemetry) addEvicted(ctx context.Context, evicted [store.NumBounds]int64) {
	for i, n := range evicted {
		if n > 0 {
			t.tb.ProcessorCollectiveattrEventsEvicted.Add(ctx, n, t.evicted[i])
		}
	}
}

// addLedgerFlags counts a round's ledger points whose sample was unusual.
func (t *selfTelemetry) addLedgerFlags(ctx context.Context, flagged ledgerFlagCounts) {
	for i, n := range flagged {
		if n > 0 {
			t.tb.ProcessorCollectiveattrLedgerPointsFlagged.Add(ctx, n, t.ledgerFlags[i])
		}
	}
}

// emitFailed counts n result batches of signal s not delivered for reason f.
func (t *selfTelemetry) emitFailed(s signal, f emitFailure, n int64) {
	t.tb.ProcessorCollectiveattrEmitFailures.Add(context.Background(), n, t.emitFailures[s][f])
}

func (t *selfTelemetry) resultEmitted(ctx context.Context, classification string) {
	opt, ok := t.emitted[classification]
	if !ok {
		opt = metric.WithAttributeSet(attribute.NewSet(attribute.String("classification", classification)))
	}
	t.tb.ProcessorCollectiveattrResultsEmitted.Add(ctx, 1, opt)
}

// skipLog logs skipped items at most once per reason per minute, saying how
// many more were skipped in between (contract §6). Callers serialise it.
type skipLog struct {
	logger     *zap.Logger
	now        func() time.Time
	last       [numReasons]time.Time
	suppressed [numReasons]int64
}

const skipLogPeriod = time.Minute

// log logs n items skipped for one reason at once, as n calls of one.
func (l *skipLog) log(s signal, skip ingest.Skip, n int64) {
	i := reasonIndex(skip.Reason)
	now := l.now()
	if !l.last[i].IsZero() && now.Sub(l.last[i]) < skipLogPeriod {
		l.suppressed[i] += n
		return
	}
	l.logger.Warn("collectiveattr: input item not converted; it still passes through",
		zap.String("reason", string(skipReasons[i])),
		zap.String("signal", s.String()),
		zap.String("detail", skip.Detail),
		zap.Int64("suppressed_since_last_log", l.suppressed[i]))
	l.last[i] = now
	l.suppressed[i] = n - 1
}
