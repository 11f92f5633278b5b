package collectiveattrprocessor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
)

// failureCounts records an emitter's failure counts.
type failureCounts struct {
	mu sync.Mutex
	n  map[signal]map[emitFailure]int64
}

func (f *failureCounts) add(s signal, r emitFailure, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[signal]map[emitFailure]int64{}
	}
	if f.n[s] == nil {
		f.n[s] = map[emitFailure]int64{}
	}
	f.n[s][r] += n
}

func (f *failureCounts) get(s signal, r emitFailure) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[s][r]
}

// TestEmitterFailures: every way a batch can fail to reach its consumer is
// counted under its reason, and enqueue never waits for the consumer.
func TestEmitterFailures(t *testing.T) {
	const timeout = 5 * time.Second
	ok := func(context.Context) error { return nil }
	refuse := func(context.Context) error { return errors.New("503") }
	untilDone := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

	t.Run("delivered", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var counts failureCounts
			e := newEmitter(timeout, zap.NewNop(), counts.add)
			for range 3 {
				e.enqueue(signalLogs, resultBatch{send: ok})
			}
			assert.True(t, e.flush(context.Background()))
			e.stop()
			assert.Empty(t, counts.n)
		})
	})
	t.Run("refused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var counts failureCounts
			e := newEmitter(timeout, zap.NewNop(), counts.add)
			e.enqueue(signalTraces, resultBatch{results: 2, send: refuse})
			assert.True(t, e.flush(context.Background()))
			e.stop()
			assert.Equal(t, int64(1), counts.get(signalTraces, emitRefused))
		})
	})
	t.Run("timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var counts failureCounts
			e := newEmitter(timeout, zap.NewNop(), counts.add)
			start := time.Now()
			e.enqueue(signalMetrics, resultBatch{send: untilDone})
			e.enqueue(signalMetrics, resultBatch{send: untilDone})
			assert.Zero(t, time.Since(start), "enqueue does not wait")
			assert.True(t, e.flush(context.Background()))
			assert.Equal(t, 2*timeout, time.Since(start), "one deadline per send, in order")
			e.stop()
			assert.Equal(t, int64(2), counts.get(signalMetrics, emitTimeout))
		})
	})
	t.Run("queue full, then shutdown", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var counts failureCounts
			e := newEmitter(timeout, zap.NewNop(), counts.add)
			// A consumer that ignores its context: the send never ends by
			// itself.
			release := make(chan struct{})
			stuck := func(context.Context) error { <-release; return nil }
			e.enqueue(signalLogs, resultBatch{send: stuck})
			synctest.Wait() // the first batch is in flight
			for range emitQueueBatches + 2 {
				e.enqueue(signalLogs, resultBatch{results: 1, send: stuck})
			}
			assert.Equal(t, int64(2), counts.get(signalLogs, emitQueueFull))
			// The other signals are not held up.
			e.enqueue(signalTraces, resultBatch{send: refuse})
			synctest.Wait()
			assert.Equal(t, int64(1), counts.get(signalTraces, emitRefused))

			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			assert.False(t, e.flush(ctx))
			assert.Equal(t, time.Second, time.Since(start), "flush ends with its context")
			e.stop()
			assert.Equal(t, int64(1+emitQueueBatches), counts.get(signalLogs, emitShutdown), "in flight and queued")
			e.enqueue(signalLogs, resultBatch{send: ok})
			assert.Equal(t, int64(2+emitQueueBatches), counts.get(signalLogs, emitShutdown), "after stop")
			close(release) // the abandoned send ends; it is not counted again
			synctest.Wait()
			assert.Equal(t, int64(2+emitQueueBatches), counts.get(signalLogs, emitShutdown))
		})
	})
}

// stuckLogs passes the input through but never returns from a result
// batch until released, whatever its context says: the worst downstream.
type stuckLogs struct {
	consumertest.LogsSink
	release chan struct{}
}

func (s *stuckLogs) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if _, isResult := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().Get("collective_attribution.classification"); isResult {
		<-s.release
		return nil
	}
	return s.LogsSink.ConsumeLogs(ctx, ld)
}

// TestBlockedDownstreamBlocksNothing: with a next consumer that never
// returns from a result batch, ingestion and the evaluation ticks go on,
// and Shutdown returns within emit_timeout, counting the undelivered
// batch. Before the emitter, the first tick with results hung the
// evaluation loop and Shutdown with it.
func TestBlockedDownstreamBlocksNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := componenttest.NewTelemetry()
		defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
		cfg := streamingConfig(EmitOnSettle)
		next := &stuckLogs{release: make(chan struct{})}
		defer close(next.release)
		p, err := NewFactory().CreateLogs(context.Background(), metadatatest.NewSettings(tel), cfg, consumer.Logs(next))
		require.NoError(t, err)
		require.NoError(t, p.Start(context.Background(), nil))

		t0 := time.Now().UnixNano()
		const s = int64(time.Second)
		job := jobTraffic{job: "stuck", ranks: 2, stepNs: s / 10, spikes: []int64{t0 + 15*s/10, t0 + 55*s/10}}
		for sec := range int64(10) {
			start := time.Now()
			require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(job.lines(t0+sec*s, t0+(sec+1)*s))))
			assert.Zero(t, time.Since(start), "ingestion does not wait")
			time.Sleep(time.Second)
			synctest.Wait()
		}
		assert.Len(t, next.AllLogs(), 10, "every input batch passed through")
		// The loop kept evaluating after the first result batch got stuck.
		var evaluations metricdata.Sum[int64]
		m, err := tel.GetMetric("otelcol_processor_collectiveattr_evaluations")
		require.NoError(t, err)
		evaluations = m.Data.(metricdata.Sum[int64])
		assert.GreaterOrEqual(t, evaluations.DataPoints[0].Value, int64(5))

		start := time.Now()
		require.NoError(t, p.Shutdown(context.Background()), "an undelivered batch is counted, not a Shutdown error")
		assert.LessOrEqual(t, time.Since(start), cfg.EmitTimeout)
		// Both spikes' results settled before shutdown: the first batch is
		// stuck in flight, the second waits behind it.
		metadatatest.AssertEqualProcessorCollectiveattrEmitFailures(t, tel, []metricdata.DataPoint[int64]{
			{Attributes: attribute.NewSet(attribute.String("signal", "logs"), attribute.String("reason", "shutdown")), Value: 2},
		}, metricdatatest.IgnoreTimestamp())
	})
}
