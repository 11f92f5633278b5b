package collectiveattrprocessor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func resultSpanCount(batches []ptrace.Traces) int {
	n := 0
	for _, td := range batches {
		for i := range td.ResourceSpans().Len() {
			sss := td.ResourceSpans().At(i).ScopeSpans()
			for j := range sss.Len() {
				spans := sss.At(j).Spans()
				for k := range spans.Len() {
					if spans.At(k).Name() == "collective_attribution" {
						n++
					}
				}
			}
		}
	}
	return n
}

func metricNames(batches []pmetric.Metrics) map[string]bool {
	names := map[string]bool{}
	for _, md := range batches {
		for i := range md.ResourceMetrics().Len() {
			sms := md.ResourceMetrics().At(i).ScopeMetrics()
			for j := range sms.Len() {
				ms := sms.At(j).Metrics()
				for k := range ms.Len() {
					names[ms.At(k).Name()] = true
				}
			}
		}
	}
	return names
}

// TestPipelinesShareOneCore: traces, metrics and logs pipelines naming the
// same component share one state; each Shutdown flushes what is pending to
// every pipeline still alive, and nothing reaches a pipeline after its own
// Shutdown.
func TestPipelinesShareOneCore(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	cfg := createDefaultConfig().(*Config)
	cfg.Emit = EmitOnJobEnd
	p := newPipelines(t, cfg, tel)

	const s = int64(time.Second)
	now := time.Now().UnixNano() / s * s
	jobA := jobTraffic{job: "a", ranks: 2, stepNs: s / 10, spikes: []int64{now - s}}
	require.NoError(t, p.logs.ConsumeLogs(context.Background(), stormlogLogs(jobA.lines(now-2*s, now))))
	assert.Zero(t, resultSpanCount(p.tsink.AllTraces()))

	require.NoError(t, p.traces.Shutdown(context.Background()))
	assert.Equal(t, 2, resultSpanCount(p.tsink.AllTraces()), "traces flushed on their own Shutdown")
	assert.Len(t, resultLogs(t, p.lsink), 2, "live logs pipeline got the same results")
	names := metricNames(p.msink.AllMetrics())
	assert.True(t, names["gpu.memory.hidden"])
	assert.True(t, names["collective_attribution.intervals"])

	// The core lives on for the pipelines still running.
	jobB := jobTraffic{job: "b", ranks: 3, stepNs: s / 10, spikes: []int64{now - s}}
	require.NoError(t, p.logs.ConsumeLogs(context.Background(), stormlogLogs(jobB.lines(now-2*s, now))))
	metricsBefore := len(p.msink.AllMetrics())
	require.NoError(t, p.metrics.Shutdown(context.Background()))
	assert.Greater(t, len(p.msink.AllMetrics()), metricsBefore, "metrics flushed on their own Shutdown")
	assert.Len(t, resultLogs(t, p.lsink), 5)
	assert.Equal(t, 2, resultSpanCount(p.tsink.AllTraces()), "nothing reaches a pipeline after its Shutdown")

	require.NoError(t, p.logs.Shutdown(context.Background()))
	assert.Len(t, resultLogs(t, p.lsink), 5)
	p.factory.mu.Lock()
	_, registered := p.factory.cores[cfg]
	p.factory.mu.Unlock()
	assert.False(t, registered, "the last Shutdown releases the shared core")
	// Shutdown twice is harmless.
	require.NoError(t, p.logs.Shutdown(context.Background()))
}

// TestShutdownWithoutStart: a core created but never started shuts down
// cleanly (the generated lifecycle test covers the factory path too).
func TestShutdownWithoutStart(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	p := newTestLogsProcessor(t, cfg, nopSettings(), new(consumertest.LogsSink))
	require.NoError(t, p.Shutdown(context.Background()))
}

// TestConcurrentPipelines feeds the three pipelines of one core from several
// goroutines while the evaluation loop ticks every few milliseconds; run
// under -race it checks the locking, and every input batch still arrives.
func TestConcurrentPipelines(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	cfg := createDefaultConfig().(*Config)
	cfg.EvaluationInterval = 5 * time.Millisecond
	cfg.SettleDelay = 0
	p := newPipelines(t, cfg, tel)

	const s = int64(time.Second)
	now := time.Now().UnixNano() / s * s
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			job := jobTraffic{job: fmt.Sprintf("job-%d", g%2), ranks: 4, stepNs: s / 10, spikes: []int64{now - 8*s, now - 3*s}}
			for sec := int64(10); sec > 0; sec-- {
				assert.NoError(t, p.logs.ConsumeLogs(context.Background(), stormlogLogs(job.lines(now-sec*s, now-(sec-1)*s))))
				assert.NoError(t, p.metrics.ConsumeMetrics(context.Background(), memoryPoint("gpu.memory.device.used", now-sec*s, rankAttrs(job.job, 0, 4), intValue(gib))))
				td, _ := benchTraces(now - sec*s)
				assert.NoError(t, p.traces.ConsumeTraces(context.Background(), td))
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	p.shutdown(t)
	inputs := 0
	for _, ld := range p.lsink.AllLogs() {
		if len(resultLogsOf(t, ld)) == 0 {
			inputs++
		}
	}
	assert.Equal(t, 40, inputs, "every input batch passed through")
	seen := map[string]bool{}
	for _, r := range resultLogs(t, p.lsink) {
		assert.False(t, seen[intervalKey(r)], "result %s emitted twice", intervalKey(r))
		seen[intervalKey(r)] = true
	}
	assert.NotEmpty(t, seen)
}

// TestStandardItemMetrics: each processor reports the collector's standard
// incoming and outgoing item counts; the batch passes through whole, and
// results, sent on the evaluation loop's own schedule, are not among them.
func TestStandardItemMetrics(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	cfg := createDefaultConfig().(*Config)
	cfg.Emit = EmitOnJobEnd
	p := newPipelines(t, cfg, tel)

	const s = int64(time.Second)
	now := time.Now().UnixNano() / s * s
	job := jobTraffic{job: "a", ranks: 2, stepNs: s / 10, spikes: []int64{now - s}}
	lines := job.lines(now-2*s, now)
	require.NoError(t, p.logs.ConsumeLogs(context.Background(), stormlogLogs(lines)))
	p.shutdown(t)
	require.NotEmpty(t, resultLogs(t, p.lsink), "results were emitted")

	for _, name := range []string{"otelcol_processor_incoming_items", "otelcol_processor_outgoing_items"} {
		m, err := tel.GetMetric(name)
		require.NoError(t, err, name)
		sum, ok := m.Data.(metricdata.Sum[int64])
		require.True(t, ok, name)
		total := int64(0)
		for _, dp := range sum.DataPoints {
			total += dp.Value
		}
		assert.Equal(t, int64(len(lines)), total, name)
	}
}
