package collectiveattrprocessor

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
	"github.com/collectiveattr/collectiveattr/inspector"
)

// inspectorLine is a verbose Inspector record of an AllReduce written by
// the process of stormlogLine's rank (host node-<rank/8>, pid 1000+rank),
// from startNs to endNs (µs-aligned to be exact).
func inspectorLine(rank, commRanks, seq, startNs, endNs int64) string {
	op := inspector.Op{
		Host: "node-" + itoa(rank/8), PID: 1000 + rank, CommID: "0x7f8c496ae9f661", CommName: "unknown",
		CommRank: rank, NRanks: commRanks, NNodes: 1,
		Kind: inspector.Collective, Name: "AllReduce", Op: "all_reduce", Seq: seq, HasSeq: true,
		MessageBytes: 1 << 20, StartNs: startNs, EndNs: endNs, ExecTimeUs: (endNs - startNs) / 1000,
		TimingSource: "kernel_gpu", AlgoBWGBs: 1, BusBWGBs: 1, DumpTimestampUs: endNs/1000 + 100,
	}
	return strings.TrimSuffix(string(inspector.RecordWriter{Verbose: true}.Append(nil, &op)), "\n")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// inspectorLines is jobTraffic.lines with every stormlog marker replaced
// by the Inspector record of a zero-length op at the same time, which the
// reference mode counts as the same one marker.
func inspectorLines(t *testing.T, j jobTraffic, fromNs, toNs int64) []string {
	t.Helper()
	var out []string
	seq := map[int64]int64{}
	for _, l := range j.lines(fromNs, toNs) {
		if !strings.Contains(l, `"event_type":"collective"`) {
			out = append(out, l)
			continue
		}
		var rank, ts int64
		for _, f := range strings.Split(l, ",") {
			if v, ok := strings.CutPrefix(f, `"rank":`); ok {
				rank = parseInt(t, v)
			}
			if v, ok := strings.CutPrefix(f, `"timestamp_ns":`); ok {
				ts = parseInt(t, v)
			}
		}
		seq[rank]++
		out = append(out, inspectorLine(rank, j.ranks, seq[rank], ts, ts))
	}
	return out
}

func parseInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, c := range s {
		require.True(t, c >= '0' && c <= '9', "number %q", s)
		n = n*10 + int64(c-'0')
	}
	return n
}

// runOnJobEnd feeds lines to one logs processor in batches of batch lines
// and returns the results emitted at shutdown, sorted.
func runOnJobEnd(t *testing.T, lines []string, batch int) []map[string]any {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.Emit = EmitOnJobEnd
	sink := new(consumertest.LogsSink)
	p := newTestLogsProcessor(t, cfg, nopSettings(), sink)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	for i := 0; i < len(lines); i += batch {
		require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(lines[i:min(i+batch, len(lines))])))
	}
	require.NoError(t, p.Shutdown(context.Background()))
	out := resultLogs(t, sink)
	slices.SortFunc(out, func(a, b map[string]any) int { return strings.Compare(intervalKey(a), intervalKey(b)) })
	return out
}

// Inspector records joined by (host, pid) to the ranks of stormlog samples
// give the results of stormlog markers at the same times.
func TestInspectorMarkersEqualStormlogMarkers(t *testing.T) {
	const s = int64(time.Second)
	base := time.Now().Truncate(time.Second).UnixNano() - 60*s
	j := jobTraffic{job: "insp", ranks: 4, stepNs: s / 10, spikes: []int64{base + 10*s, base + 25*s, base + 40*s}}
	want := runOnJobEnd(t, j.lines(base, base+50*s), 64)
	require.Len(t, want, 3*4, "one result per spike and rank")
	got := runOnJobEnd(t, inspectorLines(t, j, base, base+50*s), 64)
	assert.Equal(t, want, got)
}

// manualCore is a logs processor whose clock the test moves and whose
// evaluations it runs by hand.
func manualCore(t *testing.T, cfg *Config, tel *componenttest.Telemetry) (*testLogs, *time.Time) {
	t.Helper()
	now := time.Now()
	clk := clock{now: func() time.Time { return now }, newTicker: func(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }}
	f := newFactory(clk)
	p, err := f.processorFactory().CreateLogs(context.Background(), metadatatest.NewSettings(tel), cfg, consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })
	return &testLogs{Logs: p, core: f.cores[cfg]}, &now
}

func TestInspectorHeldUntilTelemetryThenGivenUp(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	cfg := createDefaultConfig().(*Config)
	cfg.NCCLInspector.Hold = 5 * time.Second
	p, now := manualCore(t, cfg, tel)
	ctx := context.Background()
	ts := now.Truncate(time.Second).UnixNano()

	// Rank 1's record comes before its telemetry; rank 7's telemetry never comes.
	in := stormlogLogs([]string{inspectorLine(1, 8, 1, ts, ts+2000_000), inspectorLine(7, 8, 1, ts, ts+2000_000)})
	require.NoError(t, p.ConsumeLogs(ctx, in))
	assert.Equal(t, -1, jobEvents(p.core, "insp"))

	*now = now.Add(time.Second)
	require.NoError(t, p.ConsumeLogs(ctx, stormlogLogs([]string{stormlogLine("insp", 1, 8, ts, "sample", gib)})))
	require.Equal(t, 1, jobEvents(p.core, "insp"))
	require.NoError(t, p.core.evaluate(ctx, false))
	assert.Equal(t, 3, jobEvents(p.core, "insp"), "the held record's start and end markers joined rank 1")
	metadatatest.AssertEqualProcessorCollectiveattrInspectorRecordsHeld(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())

	*now = now.Add(5 * time.Second)
	require.NoError(t, p.core.evaluate(ctx, false))
	metadatatest.AssertEqualProcessorCollectiveattrItemsSkipped(t, tel, []metricdata.DataPoint[int64]{{
		Attributes: attribute.NewSet(attribute.String("reason", "unjoinable"), attribute.String("signal", "logs")),
		Value:      1,
	}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorCollectiveattrInspectorRecordsHeld(t, tel, []metricdata.DataPoint[int64]{{Value: 0}}, metricdatatest.IgnoreTimestamp())
	outcome := func(o string, n int64) metricdata.DataPoint[int64] {
		return metricdata.DataPoint[int64]{Attributes: attribute.NewSet(attribute.String("outcome", o)), Value: n}
	}
	metadatatest.AssertEqualProcessorCollectiveattrInspectorRecords(t, tel,
		[]metricdata.DataPoint[int64]{outcome("read", 2), outcome("joined", 1)}, metricdatatest.IgnoreTimestamp())
}

// Two jobs on one host whose ranks share a rank number but not a pid: each
// record goes to its own job. A pid the first job used, reused by the
// second job once the first's mapping expired, goes to the second job.
func TestInspectorNoCrossJob(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	cfg := createDefaultConfig().(*Config)
	cfg.IdentityTTL = time.Minute
	cfg.JobIdleTimeout = time.Hour
	p, now := manualCore(t, cfg, tel)
	ctx := context.Background()
	ts := now.Truncate(time.Second).UnixNano()

	// job-a rank 0 is pid 1000 on node-0; job-b rank 0 is pid 2000 there.
	sample := func(job string, pid int64, at int64) string {
		return strings.Replace(stormlogLine(job, 0, 2, at, "sample", gib), `"pid":1000`, `"pid":`+itoa(pid), 1)
	}
	record := func(pid int64, at int64) string {
		return strings.Replace(inspectorLine(0, 2, 1, at, at), `"pid":1000`, `"pid":`+itoa(pid), 1)
	}
	require.NoError(t, p.ConsumeLogs(ctx, stormlogLogs([]string{sample("job-a", 1000, ts), sample("job-b", 2000, ts)})))
	require.NoError(t, p.ConsumeLogs(ctx, stormlogLogs([]string{record(2000, ts+int64(time.Second)), record(2000, ts+2*int64(time.Second))})))
	assert.Equal(t, 1, jobEvents(p.core, "job-a"))
	assert.Equal(t, 3, jobEvents(p.core, "job-b"))

	// job-a goes silent; past the TTL job-b's rank reports pid 1000 (in a
	// sample of its own: an identical one would be a duplicate).
	*now = now.Add(2 * time.Minute)
	require.NoError(t, p.ConsumeLogs(ctx, stormlogLogs([]string{sample("job-b", 1000, ts+int64(500*time.Millisecond))})))
	require.NoError(t, p.ConsumeLogs(ctx, stormlogLogs([]string{record(1000, ts+3*int64(time.Second))})))
	assert.Equal(t, 1, jobEvents(p.core, "job-a"), "job-a never gets a record")
	assert.Equal(t, 5, jobEvents(p.core, "job-b"), "its second sample and the record")
}
