package collectiveattrprocessor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
	"github.com/collectiveattr/collectiveattr/evidence"
)

// refusingLogs passes the input batches through but refuses result batches,
// as an exporter whose queue is full would.
type refusingLogs struct {
	consumertest.LogsSink
	err error
}

func (r *refusingLogs) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	if _, isResult := lrs.At(0).Attributes().Get("collective_attribution.classification"); isResult {
		return r.err
	}
	return r.LogsSink.ConsumeLogs(ctx, ld)
}

// TestDownstreamErrorIsCounted: a next consumer refusing results is counted
// (emit_failures, reason refused) and logged; Shutdown, which waits for the
// emission, still succeeds: the downstream's failure is not the
// processor's.
func TestDownstreamErrorIsCounted(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	cfg := createDefaultConfig().(*Config)
	cfg.Emit = EmitOnJobEnd
	refused := errors.New("queue is full")
	next := &refusingLogs{err: refused}
	p, err := NewFactory().CreateLogs(context.Background(), metadatatest.NewSettings(tel), cfg, consumer.Logs(next))
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), nil))

	const s = int64(time.Second)
	now := time.Now().UnixNano() / s * s
	job := jobTraffic{job: "refused", ranks: 2, stepNs: s / 10, spikes: []int64{now - s}}
	require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(job.lines(now-2*s, now))))
	require.NoError(t, p.Shutdown(context.Background()))
	metadatatest.AssertEqualProcessorCollectiveattrEmitFailures(t, tel, []metricdata.DataPoint[int64]{{
		Attributes: attribute.NewSet(attribute.String("signal", "logs"), attribute.String("reason", "refused")),
		Value:      1,
	}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorCollectiveattrResultsEmitted(t, tel, []metricdata.DataPoint[int64]{{
		Attributes: attribute.NewSet(attribute.String("classification", "collective_confident")),
		Value:      2,
	}}, metricdatatest.IgnoreTimestamp())
}

// TestResultMetrics checks the values behind the result metrics: hidden
// memory is device used minus allocator reserved, signed, for every sample;
// interval counts are per (job, rank, classification).
func TestResultMetrics(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Emit = EmitOnJobEnd
	msink := new(consumertest.MetricsSink)
	f := NewFactory()
	mp, err := f.CreateMetrics(context.Background(), nopSettings(), cfg, msink)
	require.NoError(t, err)
	lp, err := f.CreateLogs(context.Background(), nopSettings(), cfg, consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, mp.Start(context.Background(), nil))
	require.NoError(t, lp.Start(context.Background(), nil))

	const s = int64(time.Second)
	now := time.Now().UnixNano() / s * s
	job := jobTraffic{job: "m", ranks: 2, stepNs: s / 10, spikes: []int64{now - s}}
	lines := job.lines(now-2*s, now)
	// One sample whose device used is below the allocator reserved.
	lines = append(lines, stormlogLine("m", 0, 2, now, "sample", -gib))
	require.NoError(t, lp.ConsumeLogs(context.Background(), stormlogLogs(lines)))
	require.NoError(t, mp.Shutdown(context.Background()))
	require.NoError(t, lp.Shutdown(context.Background()))

	hidden := map[int64]int{}
	var negative, intervals int
	for _, md := range msink.AllMetrics() {
		for i := range md.ResourceMetrics().Len() {
			sms := md.ResourceMetrics().At(i).ScopeMetrics()
			for j := range sms.Len() {
				ms := sms.At(j).Metrics()
				for k := range ms.Len() {
					m := ms.At(k)
					switch m.Name() {
					case "gpu.memory.hidden":
						dps := m.Gauge().DataPoints()
						for l := range dps.Len() {
							rank, _ := dps.At(l).Attributes().Get("training.rank")
							hidden[rank.Int()]++
							if dps.At(l).IntValue() == -gib {
								negative++
							}
						}
					case "collective_attribution.intervals":
						dps := m.Sum().DataPoints()
						require.Equal(t, pmetric.AggregationTemporalityCumulative, m.Sum().AggregationTemporality())
						for l := range dps.Len() {
							intervals += int(dps.At(l).IntValue())
						}
					}
				}
			}
		}
	}
	assert.Equal(t, map[int64]int{0: 21, 1: 20}, hidden, "one point per sample")
	assert.Equal(t, 1, negative, "hidden memory is signed")
	assert.Equal(t, 2, intervals, "one confident interval per rank")
}

// TestResultMetricTurnedOff: a result metric the configuration turns off
// (metrics.gpu.memory.hidden.enabled: false) has no points; the others
// are emitted as before.
func TestResultMetricTurnedOff(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Emit = EmitOnJobEnd
	cfg.Metrics.Output.GpuMemoryHidden.Enabled = false
	msink := new(consumertest.MetricsSink)
	f := NewFactory()
	mp, err := f.CreateMetrics(context.Background(), nopSettings(), cfg, msink)
	require.NoError(t, err)
	lp, err := f.CreateLogs(context.Background(), nopSettings(), cfg, consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, mp.Start(context.Background(), nil))
	require.NoError(t, lp.Start(context.Background(), nil))
	const s = int64(time.Second)
	now := time.Now().UnixNano() / s * s
	job := jobTraffic{job: "m", ranks: 2, stepNs: s / 10, spikes: []int64{now - s}}
	require.NoError(t, lp.ConsumeLogs(context.Background(), stormlogLogs(job.lines(now-2*s, now))))
	require.NoError(t, mp.Shutdown(context.Background()))
	require.NoError(t, lp.Shutdown(context.Background()))

	names := map[string]int{}
	for _, md := range msink.AllMetrics() {
		for i := range md.ResourceMetrics().Len() {
			sms := md.ResourceMetrics().At(i).ScopeMetrics()
			for j := range sms.Len() {
				ms := sms.At(j).Metrics()
				for k := range ms.Len() {
					names[ms.At(k).Name()]++
				}
			}
		}
	}
	assert.NotContains(t, names, "gpu.memory.hidden")
	for _, n := range []string{"gpu.memory.hidden.peak", "collective_attribution.intervals", "collective_attribution.attributed_bytes", "collective_attribution.confidence"} {
		assert.Contains(t, names, n)
	}
}

// TestSkipLogIsRateLimited: at most one log line per reason per minute of
// the injected clock, with the number suppressed in between.
func TestSkipLogIsRateLimited(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := skipLog{logger: zap.New(core), now: func() time.Time { return now }}
	for range 5 {
		l.log(signalMetrics, ingest.Skip{Reason: ingest.SkipInvalidValue, Detail: "negative memory value"}, 1)
	}
	l.log(signalMetrics, ingest.Skip{Reason: ingest.SkipNoIdentity, Detail: "no rank"}, 1)
	require.Equal(t, 2, logs.Len(), "one line per reason")
	now = now.Add(59 * time.Second)
	l.log(signalLogs, ingest.Skip{Reason: ingest.SkipInvalidValue, Detail: "bad record"}, 1)
	require.Equal(t, 2, logs.Len())
	now = now.Add(time.Second)
	l.log(signalLogs, ingest.Skip{Reason: ingest.SkipInvalidValue, Detail: "bad record"}, 1)
	require.Equal(t, 3, logs.Len())
	last := logs.All()[2].ContextMap()
	assert.Equal(t, "invalid_value", last["reason"])
	assert.Equal(t, int64(5), last["suppressed_since_last_log"])

	// n items at once log as n calls of one: the first may log, the rest
	// are suppressed.
	now = now.Add(time.Minute)
	l.log(signalLogs, ingest.Skip{Reason: ingest.SkipInvalidValue, Detail: "stale"}, 4)
	require.Equal(t, 4, logs.Len())
	l.log(signalLogs, ingest.Skip{Reason: ingest.SkipInvalidValue, Detail: "stale"}, 2)
	now = now.Add(time.Minute)
	l.log(signalLogs, ingest.Skip{Reason: ingest.SkipInvalidValue, Detail: "stale"}, 1)
	require.Equal(t, 5, logs.Len())
	assert.Equal(t, int64(5), logs.All()[4].ContextMap()["suppressed_since_last_log"])
}

// A result NCCL's accounting alone made has no peak sample: its
// attributed_bytes point carries the accounted growth, not a gap of 0.
func TestLatestResultBytesOfAccountingOnly(t *testing.T) {
	accounted := gib
	for _, tt := range []struct {
		name string
		r    attribution.Result
		want int64
	}{
		{"sampled", attribution.Result{Evidence: attribution.Evidence{PeakGapBytes: 3 * gib}, ExcessBytes: gib, NCCLAccountedBytes: &accounted,
			ReasonCodes: []string{evidence.ReasonAccountingCovers}}, 3 * gib},
		{"accounting only", attribution.Result{ExcessBytes: gib, NCCLAccountedBytes: &accounted,
			ReasonCodes: []string{evidence.ReasonCollectiveMarker, evidence.ReasonAccountingOnly}}, gib},
		{"members' accounting only", attribution.Result{ExcessBytes: 2 * gib,
			ReasonCodes: []string{evidence.ReasonCollectiveMarker, evidence.ReasonAccountingMembersOnly}}, 2 * gib},
	} {
		m := newResultMetrics()
		tt.r.Rank, tt.r.Mode, tt.r.Classification = 3, attribution.ModeEvidence, attribution.CollectiveConfirmed
		m.record(&output.Item{JobID: "j", Result: &tt.r}, 1)
		if got := m.latest[rankKey{"j", 3}].PeakGapBytes; got != tt.want {
			t.Errorf("%s: attributed bytes %d, want %d", tt.name, got, tt.want)
		}
	}
}
