package collectiveattrprocessor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/ledger"
)

// ledgerParts returns the last gpu.memory.hidden.usage value per (rank,
// part) in the batches.
func ledgerParts(batches []pmetric.Metrics) map[string]int64 {
	out := map[string]int64{}
	for _, md := range batches {
		for i := range md.ResourceMetrics().Len() {
			sms := md.ResourceMetrics().At(i).ScopeMetrics()
			for j := range sms.Len() {
				ms := sms.At(j).Metrics()
				for k := range ms.Len() {
					if ms.At(k).Name() != "gpu.memory.hidden.usage" {
						continue
					}
					dps := ms.At(k).Gauge().DataPoints()
					for l := range dps.Len() {
						rank, _ := dps.At(l).Attributes().Get("training.rank")
						part, _ := dps.At(l).Attributes().Get("gpu.memory.hidden.part")
						out[fmt.Sprintf("%d/%s", rank.Int(), part.Str())] = dps.At(l).IntValue()
					}
				}
			}
		}
	}
	return out
}

// TestLedgerGaugesAndGrowth: in evidence mode every evaluation reports each
// rank's ledger at its newest sample, NCCL's part from its accounting; a
// rank whose hidden memory creeps up (8 MiB/s, no collective) shows it as
// unexplained, its context held at the session's first level although the
// start has left the window, and gets one non_collective result of kind
// unexplained_growth per minute of growth.
func TestLedgerGaugesAndGrowth(t *testing.T) {
	const s = int64(time.Second)
	clk := &manualClock{t: time.Unix(1_800_000_000, 0)}
	cfg := createDefaultConfig().(*Config)
	cfg.Mode = ModeEvidence
	cfg.Window = 90 * time.Second
	require.NoError(t, cfg.Validate())
	f := newFactory(clk.clock())
	msink, lsink := new(consumertest.MetricsSink), new(consumertest.LogsSink)
	mp, lp, c := startMetricsAndLogs(t, f, cfg, msink, lsink)
	ctx := context.Background()

	t0 := clk.now().UnixNano() - 10*s
	leak := func(ts int64) int64 { return max(0, (ts-t0-20*s)/s) * 8 * mib }
	send := func(from, to int64) {
		var lines []string
		for ts := from; ts < to; ts += s / 10 {
			lines = append(lines,
				stormlogLine("leak", 0, 2, ts, "sample", gib),
				strings.Replace(stormlogLine("leak", 0, 2, ts+s/20, "comm_memory_stats", 0), `"metadata":{}`,
					`"metadata":{"nccl.comm.id":"0xa","nccl.comm.memory.total_bytes":209715200}`, 1),
				stormlogLine("leak", 1, 2, ts, "sample", gib+leak(ts)))
		}
		lsink.Reset()
		require.NoError(t, lp.ConsumeLogs(ctx, stormlogLogs(lines)))
	}
	var growths []map[string]any
	round := func() map[string]int64 {
		msink.Reset()
		lsink.Reset()
		require.NoError(t, c.evaluate(ctx, false))
		c.flushEmitter(ctx)
		for _, r := range resultLogs(t, lsink) {
			if r["kind"] == ledger.KindUnexplainedGrowth {
				growths = append(growths, r)
			}
		}
		return ledgerParts(msink.AllMetrics())
	}
	send(t0, t0+10*s)
	got := round()
	assert.Equal(t, map[string]int64{
		"0/nccl": 200 * mib, "0/context": gib - 200*mib, "0/unexplained": 0,
		"1/nccl": 0, "1/context": gib, "1/unexplained": 0,
	}, got)
	// 3 minutes on: the window (90 s) holds only the leak.
	for i := int64(1); i <= 18; i++ {
		clk.advance(10 * time.Second)
		send(t0+i*10*s, t0+(i+1)*10*s)
		got = round()
	}
	last := t0 + 190*s - s/10
	assert.Equal(t, map[string]int64{
		"0/nccl": 200 * mib, "0/context": gib - 200*mib, "0/unexplained": 0,
		"1/nccl": 0, "1/context": gib, "1/unexplained": leak(last),
	}, got)
	// 170 s of leak: growth windows of a minute that do not overlap.
	require.Len(t, growths, 2, "%v", growths)
	for _, g := range growths {
		assert.Equal(t, ledger.ClassNonCollective, g["classification"])
		assert.EqualValues(t, 1, g["rank"])
		assert.Equal(t, []any{ledger.ReasonUnexplainedGrowth}, g["reason_codes"])
		assert.InDelta(t, 45*8*mib, g["excess_bytes"], float64(32*mib), "the median rose 8 MiB/s over about 45 s")
	}
	require.NoError(t, mp.Shutdown(ctx))
	require.NoError(t, lp.Shutdown(ctx))
}

// TestLedgerGrowthAcrossRestart: growth results are not checkpointed; a
// processor restarted from a checkpoint re-derives growth from the data it
// receives after the restart, so the growth it reported before the crash
// is not reported again, and a growth that goes on is reported over the
// first minute after the restart.
func TestLedgerGrowthAcrossRestart(t *testing.T) {
	const s = int64(time.Second)
	cfg := createDefaultConfig().(*Config)
	cfg.Mode = ModeEvidence
	cfg.Window = 90 * time.Second
	cfg.Storage = &storageID
	require.NoError(t, cfg.Validate())
	st := &memStorage{values: map[string][]byte{}}
	now := time.Unix(1_800_000_000, 0)
	clk := defaultClock()
	clk.now = func() time.Time { return now }
	ctx := context.Background()

	t0 := now.UnixNano() - 10*s
	leak := func(ts int64) int64 { return max(0, (ts-t0-20*s)/s) * 8 * mib }
	lines := func(from, to int64) []string {
		var out []string
		for ts := from; ts < to; ts += s / 10 {
			out = append(out, stormlogLine("leak", 0, 2, ts, "sample", gib), stormlogLine("leak", 1, 2, ts, "sample", gib+leak(ts)))
		}
		return out
	}
	growthsOf := func(sink *consumertest.LogsSink) []map[string]any {
		var out []map[string]any
		for _, r := range resultLogs(t, sink) {
			if r["kind"] == ledger.KindUnexplainedGrowth {
				out = append(out, r)
			}
		}
		return out
	}
	run := func(p *testLogs, sink *consumertest.LogsSink, from, to int64) {
		for ts := from; ts < to; ts += 10 * s {
			require.NoError(t, p.ConsumeLogs(ctx, stormlogLogs(lines(ts, ts+10*s))))
			now = now.Add(10 * time.Second)
			require.NoError(t, p.core.evaluate(ctx, false))
			p.core.flushEmitter(ctx)
		}
	}

	before, beforeSink := startEvidenceWithStorage(t, cfg, clk, st)
	run(before, beforeSink, t0, t0+110*s)
	reported := growthsOf(beforeSink)
	require.Len(t, reported, 1, "the first minute of growth")
	before.checkpointNow()
	before.crash()
	restartNs := t0 + 110*s

	after, afterSink := startEvidenceWithStorage(t, cfg, clk, st)
	require.Equal(t, 1, jobsTracked(after.core), "the job is restored")
	require.NoError(t, after.core.evaluate(ctx, false))
	after.core.flushEmitter(ctx)
	assert.Empty(t, growthsOf(afterSink), "the growth reported before the crash is not reported again")
	run(after, afterSink, restartNs, restartNs+70*s)
	again := growthsOf(afterSink)
	require.Len(t, again, 1, "the growth goes on: reported over the first minute after the restart")
	assert.Greater(t, again[0]["interval_start_ns"], float64(restartNs))
	require.NoError(t, after.Shutdown(ctx))
}

// TestLedgerGaugesExactOnNegativeHidden: a newest sample whose device used
// is below its reservation (the two read at different instants) has
// negative hidden memory; the gauges' three parts add up to it exactly, as
// the CLI's ledger rows do, though the buffers keep the gap clamped at 0.
func TestLedgerGaugesExactOnNegativeHidden(t *testing.T) {
	const s = int64(time.Second)
	clk := &manualClock{t: time.Unix(1_800_000_000, 0)}
	cfg := createDefaultConfig().(*Config)
	cfg.Mode = ModeEvidence
	require.NoError(t, cfg.Validate())
	f := newFactory(clk.clock())
	msink := new(consumertest.MetricsSink)
	mp, lp, c := startMetricsAndLogs(t, f, cfg, msink, new(consumertest.LogsSink))
	ctx := context.Background()

	t0 := clk.now().UnixNano() - 10*s
	var lines []string
	for ts := t0; ts < t0+10*s; ts += s / 10 {
		lines = append(lines, stormlogLine("neg", 0, 1, ts, "sample", gib))
	}
	lines = append(lines, stormlogLine("neg", 0, 1, t0+10*s, "sample", -64*mib))
	require.NoError(t, lp.ConsumeLogs(ctx, stormlogLogs(lines)))
	require.NoError(t, c.evaluate(ctx, false))
	c.flushEmitter(ctx)
	got := ledgerParts(msink.AllMetrics())
	assert.Equal(t, map[string]int64{"0/nccl": 0, "0/context": gib, "0/unexplained": -gib - 64*mib}, got)
	require.NoError(t, mp.Shutdown(ctx))
	require.NoError(t, lp.Shutdown(ctx))
}

// TestLedgerFlagsUnusualSamples: a round's ledger points are counted by
// what was unusual about their sample: NCCL's accounting above the
// sample's hidden memory, and negative hidden memory (both on a rank
// whose newest sample reads below its reservation while NCCL reports
// memory); a plain rank is not counted.
func TestLedgerFlagsUnusualSamples(t *testing.T) {
	const s = int64(time.Second)
	t0 := int64(1_800_000_000) * s
	series := func(newestHidden int64) evidence.RankData {
		var rd evidence.RankData
		for ts := t0; ts < t0+10*s; ts += s / 10 {
			rd.Samples.TimesNs = append(rd.Samples.TimesNs, ts)
			rd.Samples.GapBytes = append(rd.Samples.GapBytes, gib)
			rd.Samples.TotalBytes = append(rd.Samples.TotalBytes, 80*gib)
		}
		rd.NewestHiddenNs, rd.NewestHiddenBytes = t0+10*s-s/10, newestHidden
		return rd
	}
	plain := series(gib)
	plain.Rank = 0
	above := series(256 * mib) // a late device-used read: hidden fell under NCCL's 512 MiB
	above.Rank = 1
	negative := series(-64 * mib)
	negative.Rank = 2
	for _, rd := range []*evidence.RankData{&plain, &above, &negative} {
		rd.Accounting = []evidence.AccountingSeries{{CommID: "c", TimesNs: []int64{t0, t0 + 5*s}, Bytes: []int64{512 * mib, 512 * mib}}}
	}
	in := &evidence.Input{ExpectedWorldSize: 3, TraceStartNs: t0, Ranks: []evidence.RankData{plain, above, negative}}
	points, _, flagged := newLedgers().evaluate("job", in, nil, 0, nil, 2)
	require.Len(t, points, 3)
	assert.Equal(t, ledgerFlagCounts{2, 1}, flagged, "accounting above hidden on ranks 1 and 2, negative hidden on rank 2")
	for _, p := range points {
		assert.Equal(t, []int64{gib, 256 * mib, -64 * mib}[p.Rank], p.NCCL+p.Context+p.Unexplained, "rank %d: the parts add up to the sample's hidden memory", p.Rank)
	}
}

// TestLedgerFlaggedPointsAreCounted: a rank whose newest sample reads
// below its reservation is counted in
// processor_collectiveattr_ledger_points_flagged{flag="negative_hidden"}.
func TestLedgerFlaggedPointsAreCounted(t *testing.T) {
	const s = int64(time.Second)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	clk := &manualClock{t: time.Unix(1_800_000_000, 0)}
	cfg := createDefaultConfig().(*Config)
	cfg.Mode = ModeEvidence
	require.NoError(t, cfg.Validate())
	f := newFactory(clk.clock())
	ctx := context.Background()
	set := metadatatest.NewSettings(tel)
	mp, err := f.processorFactory().CreateMetrics(ctx, set, cfg, new(consumertest.MetricsSink))
	require.NoError(t, err)
	lp, err := f.processorFactory().CreateLogs(ctx, set, cfg, new(consumertest.LogsSink))
	require.NoError(t, err)
	require.NoError(t, mp.Start(ctx, nil))
	require.NoError(t, lp.Start(ctx, nil))
	c := f.cores[cfg]

	t0 := clk.now().UnixNano() - 10*s
	var lines []string
	for ts := t0; ts < t0+10*s; ts += s / 10 {
		lines = append(lines, stormlogLine("neg", 0, 2, ts, "sample", gib), stormlogLine("neg", 1, 2, ts, "sample", gib))
	}
	lines = append(lines, stormlogLine("neg", 0, 2, t0+10*s, "sample", -64*mib))
	require.NoError(t, lp.ConsumeLogs(ctx, stormlogLogs(lines)))
	require.NoError(t, c.evaluate(ctx, false))
	metadatatest.AssertEqualProcessorCollectiveattrLedgerPointsFlagged(t, tel, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("flag", "negative_hidden"))},
	}, metricdatatest.IgnoreTimestamp())
	require.NoError(t, mp.Shutdown(ctx))
	require.NoError(t, lp.Shutdown(ctx))
}
