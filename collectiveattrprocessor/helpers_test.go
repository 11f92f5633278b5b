package collectiveattrprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
)

const (
	gib          = int64(1) << 30
	mib          = int64(1) << 20
	deviceTotal  = 80 * gib
	baseReserved = 10 * gib
)

// stormlogLine is a valid TelemetryEvent v2 record of a rank. A sample's
// hidden gap is gap bytes; a "collective" record is a marker.
func stormlogLine(job string, rank, world, ts int64, eventType string, gap int64) string {
	used := baseReserved + gap
	return fmt.Sprintf(`{"schema_version":2,"timestamp_ns":%d,"event_type":%q,"collector":"stormlog.cuda_tracker",`+
		`"sampling_interval_ms":100,"pid":%d,"host":"node-%d","job_id":%q,"rank":%d,"local_rank":%d,"world_size":%d,`+
		`"device_id":%d,"allocator_allocated_bytes":%d,"allocator_reserved_bytes":%d,"allocator_active_bytes":null,`+
		`"allocator_inactive_bytes":null,"allocator_change_bytes":0,"device_used_bytes":%d,"device_free_bytes":%d,`+
		`"device_total_bytes":%d,"context":null,"metadata":{}}`,
		ts, eventType, 1000+rank, rank/8, job, rank, rank%8, world, rank%8,
		baseReserved, baseReserved, used, deviceTotal-used, deviceTotal)
}

// baselineGap is a small, varying hidden gap (under every preset's
// min_gap_bytes) so that the robust z-score of a spike is well defined.
func baselineGap(i int64) int64 { return 100*mib + (i*7919%13)*mib }

const spikeGap = 2 * gib

// jobTraffic is a synthetic job: every rank samples every stepNs and, at
// each spike time, shows a spikeGap gap next to a collective marker.
type jobTraffic struct {
	job    string
	ranks  int64
	stepNs int64
	spikes []int64
}

// lines returns the job's records with event times in [fromNs, toNs).
func (j jobTraffic) lines(fromNs, toNs int64) []string {
	var out []string
	first := (fromNs + j.stepNs - 1) / j.stepNs * j.stepNs
	for ts := first; ts < toNs; ts += j.stepNs {
		spike := false
		for _, s := range j.spikes {
			if s == ts {
				spike = true
			}
		}
		for r := range j.ranks {
			gap := baselineGap(ts / j.stepNs)
			if spike {
				gap = spikeGap
				out = append(out, stormlogLine(j.job, r, j.ranks, ts, "collective", 0))
			}
			out = append(out, stormlogLine(j.job, r, j.ranks, ts, "sample", gap))
		}
	}
	return out
}

// resultLogs returns the decoded bodies of the result log records a sink
// received (records carrying the classification attribute), in order.
func resultLogs(t *testing.T, sink *consumertest.LogsSink) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ld := range sink.AllLogs() {
		out = append(out, resultLogsOf(t, ld)...)
	}
	return out
}

func resultLogsOf(t *testing.T, ld plog.Logs) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i := range ld.ResourceLogs().Len() {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				lr := lrs.At(k)
				if _, ok := lr.Attributes().Get("collective_attribution.classification"); !ok {
					continue
				}
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(lr.Body().Str()), &m))
				out = append(out, m)
			}
		}
	}
	return out
}

// intervalKey identifies a result by (job, rank, interval start).
func intervalKey(m map[string]any) string {
	return fmt.Sprintf("%v/%v/%v", m["job_id"], m["rank"], m["interval_start_ns"])
}

// testLogs is a logs processor and its core.
type testLogs struct {
	processor.Logs
	core *core
}

func newTestLogsProcessor(t testing.TB, cfg *Config, set processor.Settings, next *consumertest.LogsSink) *testLogs {
	t.Helper()
	f := newFactory(defaultClock())
	p, err := f.processorFactory().CreateLogs(context.Background(), set, cfg, next)
	require.NoError(t, err)
	return &testLogs{Logs: p, core: f.cores[cfg]}
}

// newCoreLogs is newTestLogsProcessor for benchmarks.
func newCoreLogs(b testing.TB, cfg *Config) *testLogs {
	f := newFactory(defaultClock())
	p, err := f.processorFactory().CreateLogs(context.Background(), nopSettings(), cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	return &testLogs{Logs: p, core: f.cores[cfg]}
}

// startMetricsAndLogs creates and starts the metrics and logs processors of
// cfg on f, which share one core: gauges go to metrics, results to logs.
// The test shuts them down itself (shutdown emits what is pending).
func startMetricsAndLogs(t testing.TB, f *factory, cfg *Config, metrics consumer.Metrics, logs consumer.Logs) (processor.Metrics, processor.Logs, *core) {
	t.Helper()
	ctx := context.Background()
	mp, err := f.processorFactory().CreateMetrics(ctx, nopSettings(), cfg, metrics)
	require.NoError(t, err)
	lp, err := f.processorFactory().CreateLogs(ctx, nopSettings(), cfg, logs)
	require.NoError(t, err)
	require.NoError(t, mp.Start(ctx, nil))
	require.NoError(t, lp.Start(ctx, nil))
	return mp, lp, f.cores[cfg]
}

func nopSettings() processor.Settings { return processortest.NewNopSettings(metadata.Type) }

// jobsTracked reads the core's job count the way the jobs_tracked gauge does.
func jobsTracked(c *core) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	jobs, _, _ := c.store.Sizes()
	return jobs
}

// markerSpanTraces is one NCCL kernel span of (job, rank) with trace id
// {1} and span id {span}, from start to end.
func markerSpanTraces(job string, rank int64, span byte, start, end int64) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("training.job.id", job)
	rs.Resource().Attributes().PutInt("training.rank", rank)
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetName("ncclDevKernel_AllReduce_Sum_f32_RING_LL")
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{span})
	sp.SetStartTimestamp(pcommon.Timestamp(start))
	sp.SetEndTimestamp(pcommon.Timestamp(end))
	return td
}

// identifiedMarkerSpan is a marker span of rank 0 of job (world 2) from
// start to end whose attributes are attrs (nccl.comm.ranks as a []any of
// its entries' values).
func identifiedMarkerSpan(job string, start, end int64, attrs map[string]any) ptrace.Traces {
	td := markerSpanTraces(job, 0, 1, start, end)
	rs := td.ResourceSpans().At(0)
	rs.Resource().Attributes().PutInt("training.world_size", 2)
	sp := rs.ScopeSpans().At(0).Spans().At(0)
	if err := sp.Attributes().FromRaw(attrs); err != nil {
		panic(err)
	}
	return td
}
