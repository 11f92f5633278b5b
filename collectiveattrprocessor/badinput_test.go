package collectiveattrprocessor

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
)

// pipelines are the three processors of one component ID, sharing a core.
type pipelines struct {
	factory *factory
	core    *core
	traces  processor.Traces
	metrics processor.Metrics
	logs    processor.Logs
	tsink   *consumertest.TracesSink
	msink   *consumertest.MetricsSink
	lsink   *consumertest.LogsSink
}

func newPipelines(t *testing.T, cfg *Config, tel *componenttest.Telemetry) *pipelines {
	t.Helper()
	set := metadatatest.NewSettings(tel)
	f := newFactory(defaultClock())
	pf := f.processorFactory()
	p := &pipelines{factory: f, tsink: new(consumertest.TracesSink), msink: new(consumertest.MetricsSink), lsink: new(consumertest.LogsSink)}
	var err error
	p.traces, err = pf.CreateTraces(context.Background(), set, cfg, p.tsink)
	require.NoError(t, err)
	p.metrics, err = pf.CreateMetrics(context.Background(), set, cfg, p.msink)
	require.NoError(t, err)
	p.logs, err = pf.CreateLogs(context.Background(), set, cfg, p.lsink)
	require.NoError(t, err)
	require.Len(t, f.cores, 1, "one core per component ID")
	p.core = f.cores[cfg]
	require.Equal(t, 3, p.core.refs)
	require.NoError(t, p.traces.Start(context.Background(), nil))
	require.NoError(t, p.metrics.Start(context.Background(), nil))
	require.NoError(t, p.logs.Start(context.Background(), nil))
	return p
}

func (p *pipelines) shutdown(t *testing.T) {
	t.Helper()
	require.NoError(t, p.traces.Shutdown(context.Background()))
	require.NoError(t, p.metrics.Shutdown(context.Background()))
	require.NoError(t, p.logs.Shutdown(context.Background()))
}

// jobEvents returns the number of buffered entries of a job (-1: untracked).
func jobEvents(c *core, job string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if j, ok := c.store.InspectJob(job); ok {
		return j.Events
	}
	return -1
}

// memoryPoint builds a one-point gauge.
func memoryPoint(name string, ts int64, attrs map[string]any, set func(pmetric.NumberDataPoint)) pmetric.Metrics {
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit("By")
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(pcommon.Timestamp(ts))
	if err := dp.Attributes().FromRaw(attrs); err != nil {
		panic(err)
	}
	set(dp)
	return md
}

func intValue(v int64) func(pmetric.NumberDataPoint) {
	return func(dp pmetric.NumberDataPoint) { dp.SetIntValue(v) }
}

func doubleValue(v float64) func(pmetric.NumberDataPoint) {
	return func(dp pmetric.NumberDataPoint) { dp.SetDoubleValue(v) }
}

func rankAttrs(job string, rank, world int64) map[string]any {
	return map[string]any{"training.job.id": job, "training.rank": rank, "training.world_size": world}
}

// TestBadInput: each row feeds one kind of bad input next to a healthy job.
// The input reaches the next consumer intact, the skip is counted by signal
// and reason, and the healthy job's state is untouched.
func TestBadInput(t *testing.T) {
	now := time.Now().UnixNano()
	const s = int64(time.Second)
	good := jobTraffic{job: "good", ranks: 2, stepNs: s / 10}
	longID := strings.Repeat("j", 300) // over the default limits.max_identity_bytes
	tests := []struct {
		name     string
		cfg      func(*Config)
		traces   func() ptrace.Traces
		metrics  func() pmetric.Metrics
		logs     func() plog.Logs
		signal   string
		reason   string
		skipped  int64
		wantJobs int
	}{
		{
			name: "NaN bytes",
			metrics: func() pmetric.Metrics {
				return memoryPoint("gpu.memory.device.used", now, rankAttrs("bad", 0, 2), doubleValue(math.NaN()))
			},
			signal: "metrics", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "negative bytes",
			metrics: func() pmetric.Metrics {
				return memoryPoint("gpu.memory.device.used", now, rankAttrs("bad", 0, 2), intValue(-5))
			},
			signal: "metrics", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "absurd bytes",
			metrics: func() pmetric.Metrics {
				return memoryPoint("DCGM_FI_DEV_FB_USED", now, rankAttrs("bad", 0, 2), intValue(math.MaxInt64/2))
			},
			signal: "metrics", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "rank not below world size",
			metrics: func() pmetric.Metrics {
				return memoryPoint("gpu.memory.device.used", now, rankAttrs("bad", 4, 4), intValue(gib))
			},
			signal: "metrics", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "rank of the wrong type",
			metrics: func() pmetric.Metrics {
				return memoryPoint("gpu.memory.device.used", now, map[string]any{"training.job.id": "bad", "training.rank": "zero"}, intValue(gib))
			},
			signal: "metrics", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "missing identity",
			metrics: func() pmetric.Metrics {
				return memoryPoint("gpu.memory.device.used", now, map[string]any{}, intValue(gib))
			},
			signal: "metrics", reason: "no_identity", skipped: 1, wantJobs: 1,
		},
		{
			name: "device point no rank has claimed",
			metrics: func() pmetric.Metrics {
				return memoryPoint("DCGM_FI_DEV_FB_USED", now, map[string]any{"Hostname": "node-x", "gpu": "3"}, intValue(1024))
			},
			signal: "metrics", reason: "unjoinable", skipped: 1, wantJobs: 1,
		},
		{
			name: "timestamp far in the future",
			metrics: func() pmetric.Metrics {
				return memoryPoint("gpu.memory.device.used", now+48*3600*s, rankAttrs("bad", 0, 2), intValue(gib))
			},
			signal: "metrics", reason: "future", skipped: 1, wantJobs: 1,
		},
		{
			// Issue 16 item 1: a point of the good job 30 min ahead used to
			// move its newest event time and blind it.
			name: "point of a live job past max_future_skew",
			metrics: func() pmetric.Metrics {
				return memoryPoint("gpu.memory.device.used", now+30*60*s, rankAttrs("good", 0, 2), intValue(gib))
			},
			signal: "metrics", reason: "future", skipped: 1, wantJobs: 1,
		},
		{
			name: "stormlog record of a live job past max_future_skew",
			logs: func() plog.Logs {
				return stormlogLogs([]string{stormlogLine("good", 0, 2, now+30*60*s, "sample", gib)})
			},
			signal: "logs", reason: "future", skipped: 1, wantJobs: 1,
		},
		{
			// Issue 16 item 4: a client's retry of a batch already buffered.
			name:   "stormlog records identical to ones buffered",
			logs:   func() plog.Logs { return stormlogLogs(good.lines(now-s, now-s/2)) },
			signal: "logs", reason: "duplicate", skipped: 10, wantJobs: 1,
		},
		{
			// Issue 16 item 5: the id was interned and the job stored before
			// max_jobs was checked, whatever its length.
			name: "job id longer than limits.max_identity_bytes",
			metrics: func() pmetric.Metrics {
				return memoryPoint("gpu.memory.device.used", now, rankAttrs(longID, 0, 2), intValue(gib))
			},
			signal: "metrics", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "host longer than limits.max_identity_bytes",
			metrics: func() pmetric.Metrics {
				attrs := rankAttrs("bad", 0, 2)
				attrs["host.name"] = longID
				return memoryPoint("gpu.memory.device.used", now, attrs, intValue(gib))
			},
			signal: "metrics", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name:   "stormlog job id longer than limits.max_identity_bytes",
			logs:   func() plog.Logs { return stormlogLogs([]string{stormlogLine(longID, 0, 1, now, "sample", gib)}) },
			signal: "logs", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name:   "stormlog record failing validation",
			logs:   func() plog.Logs { return stormlogLogs([]string{stormlogLine("bad", 8, 8, now, "sample", gib)}) },
			signal: "logs", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "stormlog body with a bad integer",
			logs: func() plog.Logs {
				return stormlogLogs([]string{`{"schema_version":2,"timestamp_ns":1.5,"event_type":"sample"}`})
			},
			signal: "logs", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "stale record of another job",
			logs: func() plog.Logs {
				return stormlogLogs([]string{
					stormlogLine("late", 0, 1, now, "sample", gib),
					stormlogLine("late", 0, 1, now-10*60*s, "sample", gib),
				})
			},
			signal: "logs", reason: "stale", skipped: 1, wantJobs: 2,
		},
		{
			name:   "reversed marker span",
			traces: func() ptrace.Traces { return markerSpanTraces("bad", 0, 1, now, now-s) },
			signal: "traces", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			// Issue 16 item 7: the second point used to vanish uncounted.
			name: "duplicate point of one rank, metric and timestamp",
			metrics: func() pmetric.Metrics {
				md := memoryPoint("gpu.memory.device.used", now, rankAttrs("bad", 0, 2), intValue(gib))
				dps := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints()
				dps.At(0).CopyTo(dps.AppendEmpty())
				dps.At(1).SetIntValue(2 * gib)
				return md
			},
			signal: "metrics", reason: "duplicate", skipped: 1, wantJobs: 1,
		},
		{
			// Issue 16 item 2: the good job's rank 0 last reported (node-0,
			// GPU 0); a point there that names another job is not the good
			// job's, and no mapping of its own job exists.
			name: "device point naming another job than its GPU's",
			metrics: func() pmetric.Metrics {
				return memoryPoint("DCGM_FI_DEV_FB_USED", now, map[string]any{"Hostname": "node-0", "gpu": "0", "training.job.id": "bad"}, intValue(1024))
			},
			signal: "metrics", reason: "unjoinable", skipped: 1, wantJobs: 1,
		},
		{
			name:   "NCCL Inspector record torn mid-line",
			logs:   func() plog.Logs { return stormlogLogs([]string{inspectorLine(0, 2, 1, now, now)[:40]}) },
			signal: "logs", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "NCCL Inspector field of the wrong type",
			logs: func() plog.Logs {
				return stormlogLogs([]string{strings.Replace(inspectorLine(0, 2, 1, now, now), `"rank":0`, `"rank":"zero"`, 1)})
			},
			signal: "logs", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "NCCL Inspector number past int64",
			logs: func() plog.Logs {
				return stormlogLogs([]string{strings.Replace(inspectorLine(0, 2, 1, now, now), `"coll_sn":1`, `"coll_sn":123456789012345678901234567890`, 1)})
			},
			signal: "logs", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "NCCL Inspector unknown format version",
			logs: func() plog.Logs {
				return stormlogLogs([]string{strings.Replace(inspectorLine(0, 2, 1, now, now), `"v4.0"`, `"v5.0"`, 1)})
			},
			signal: "logs", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "NCCL Inspector map body with a section of the wrong type",
			logs: func() plog.Logs {
				ld := plog.NewLogs()
				m := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetEmptyMap()
				m.PutEmptyMap("header").PutStr("id", "0x1")
				m.PutStr("coll_perf", "AllReduce")
				return ld
			},
			signal: "logs", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "NCCL accounting point without nccl.comm.id",
			cfg:  func(c *Config) { c.Mode = ModeEvidence },
			metrics: func() pmetric.Metrics {
				return memoryPoint("nccl.comm.memory.total", now, rankAttrs("bad", 0, 2), intValue(gib))
			},
			signal: "metrics", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "NCCL accounting point with a communicator of the wrong type",
			cfg:  func(c *Config) { c.Mode = ModeEvidence },
			metrics: func() pmetric.Metrics {
				attrs := rankAttrs("bad", 0, 2)
				attrs["nccl.comm.id"] = int64(7)
				return memoryPoint("nccl.comm.memory.total", now, attrs, intValue(gib))
			},
			signal: "metrics", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "NCCL accounting NaN bytes",
			cfg:  func(c *Config) { c.Mode = ModeEvidence },
			metrics: func() pmetric.Metrics {
				attrs := rankAttrs("bad", 0, 2)
				attrs["nccl.comm.id"] = "0xab"
				return memoryPoint("nccl.comm.memory.total", now, attrs, doubleValue(math.NaN()))
			},
			signal: "metrics", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "NCCL accounting negative bytes",
			cfg:  func(c *Config) { c.Mode = ModeEvidence },
			metrics: func() pmetric.Metrics {
				attrs := rankAttrs("bad", 0, 2)
				attrs["nccl.comm.id"] = "0xab"
				return memoryPoint("nccl.comm.memory.total", now, attrs, intValue(-1))
			},
			signal: "metrics", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name: "NCCL accounting point without a rank",
			cfg:  func(c *Config) { c.Mode = ModeEvidence },
			metrics: func() pmetric.Metrics {
				return memoryPoint("nccl.comm.memory.total", now, map[string]any{"nccl.comm.id": "0xab"}, intValue(gib))
			},
			signal: "metrics", reason: "no_identity", skipped: 1, wantJobs: 1,
		},
		{
			name: "NCCL accounting point far in the future",
			cfg:  func(c *Config) { c.Mode = ModeEvidence },
			metrics: func() pmetric.Metrics {
				attrs := rankAttrs("bad", 0, 2)
				attrs["nccl.comm.id"] = "0xab"
				return memoryPoint("nccl.comm.memory.total", now+48*3600*s, attrs, intValue(gib))
			},
			signal: "metrics", reason: "future", skipped: 1, wantJobs: 1,
		},
		{
			name: "reversed marker span with a collective identity in evidence mode",
			cfg:  func(c *Config) { c.Mode = ModeEvidence },
			traces: func() ptrace.Traces {
				return identifiedMarkerSpan("bad", now, now-s, map[string]any{"nccl.comm.id": "0xab", "nccl.seq": int64(1)})
			},
			signal: "traces", reason: "invalid_value", skipped: 1, wantJobs: 1,
		},
		{
			name:   "new job over limits.max_jobs",
			cfg:    func(c *Config) { c.Limits.MaxJobs = 1 },
			logs:   func() plog.Logs { return stormlogLogs([]string{stormlogLine("bad", 0, 1, now, "sample", gib)}) },
			signal: "logs", reason: "over_limit", skipped: 1, wantJobs: 1,
		},
		{
			name:   "new rank over limits.max_ranks_per_job",
			cfg:    func(c *Config) { c.Limits.MaxRanksPerJob = 2 },
			logs:   func() plog.Logs { return stormlogLogs([]string{stormlogLine("good", 2, 4, now, "sample", gib)}) },
			signal: "logs", reason: "over_limit", skipped: 1, wantJobs: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tel := componenttest.NewTelemetry()
			t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
			cfg := createDefaultConfig().(*Config)
			if tt.cfg != nil {
				tt.cfg(cfg)
			}
			p := newPipelines(t, cfg, tel)
			defer p.shutdown(t)

			require.NoError(t, p.logs.ConsumeLogs(context.Background(), stormlogLogs(good.lines(now-2*s, now))))
			goodEvents := jobEvents(p.core, "good")
			require.Positive(t, goodEvents)
			p.lsink.Reset()

			switch {
			case tt.metrics != nil:
				in, want := tt.metrics(), pmetric.NewMetrics()
				in.CopyTo(want)
				require.NoError(t, p.metrics.ConsumeMetrics(context.Background(), in))
				require.Len(t, p.msink.AllMetrics(), 1)
				assertSameProto(t, (&pmetric.ProtoMarshaler{}).MarshalMetrics, want, p.msink.AllMetrics()[0])
			case tt.logs != nil:
				in, want := tt.logs(), plog.NewLogs()
				in.CopyTo(want)
				require.NoError(t, p.logs.ConsumeLogs(context.Background(), in))
				require.Len(t, p.lsink.AllLogs(), 1)
				assertSameProto(t, (&plog.ProtoMarshaler{}).MarshalLogs, want, p.lsink.AllLogs()[0])
			case tt.traces != nil:
				in, want := tt.traces(), ptrace.NewTraces()
				in.CopyTo(want)
				require.NoError(t, p.traces.ConsumeTraces(context.Background(), in))
				require.Len(t, p.tsink.AllTraces(), 1)
				assertSameProto(t, (&ptrace.ProtoMarshaler{}).MarshalTraces, want, p.tsink.AllTraces()[0])
			}

			metadatatest.AssertEqualProcessorCollectiveattrItemsSkipped(t, tel, []metricdata.DataPoint[int64]{{
				Attributes: attribute.NewSet(attribute.String("reason", tt.reason), attribute.String("signal", tt.signal)),
				Value:      tt.skipped,
			}}, metricdatatest.IgnoreTimestamp())
			assert.Equal(t, goodEvents, jobEvents(p.core, "good"), "the healthy job is untouched")
			assert.Equal(t, -1, jobEvents(p.core, "bad"), "rejected data leaves no state")
			assert.Equal(t, tt.wantJobs, jobsTracked(p.core))
		})
	}
}

// assertSameProto compares two pdata values by their OTLP encoding (which,
// unlike ==, holds for NaN values).
func assertSameProto[T any](t *testing.T, marshal func(T) ([]byte, error), want, got T) {
	t.Helper()
	w, err := marshal(want)
	require.NoError(t, err)
	g, err := marshal(got)
	require.NoError(t, err)
	assert.Equal(t, w, g, "pass-through intact")
}
