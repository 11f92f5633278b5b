package collectiveattrprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// peakPoints returns the values of metric name per rank in the batches.
func peakPoints(batches []pmetric.Metrics, name string) []map[int64]int64 {
	var out []map[int64]int64
	for _, md := range batches {
		for i := range md.ResourceMetrics().Len() {
			sms := md.ResourceMetrics().At(i).ScopeMetrics()
			for j := range sms.Len() {
				ms := sms.At(j).Metrics()
				for k := range ms.Len() {
					if ms.At(k).Name() != name {
						continue
					}
					vals := map[int64]int64{}
					dps := ms.At(k).Gauge().DataPoints()
					for l := range dps.Len() {
						rank, _ := dps.At(l).Attributes().Get("training.rank")
						vals[rank.Int()] = dps.At(l).IntValue()
					}
					out = append(out, vals)
				}
			}
		}
	}
	return out
}

// TestHiddenPeakSurvivesTheRound: a 200 ms spike (two samples at 10 Hz)
// that arrives between two peak reports is the value of the next report,
// although many samples without it follow; evaluation rounds in between
// report no peak (hidden_peak_interval 30 s, evaluation every 10 s).
func TestHiddenPeakSurvivesTheRound(t *testing.T) {
	const s = int64(time.Second)
	clk := &manualClock{t: time.Unix(1_800_000_000, 0)}
	cfg := createDefaultConfig().(*Config)
	f := newFactory(clk.clock())
	msink := new(consumertest.MetricsSink)
	mp, lp, c := startMetricsAndLogs(t, f, cfg, msink, consumertest.NewNop())
	ctx := context.Background()
	round := func() []map[int64]int64 {
		msink.Reset()
		require.NoError(t, c.evaluate(ctx, false))
		c.flushEmitter(ctx)
		return peakPoints(msink.AllMetrics(), "gpu.memory.hidden.peak")
	}
	samples := func(from, to int64, spikeAt int64) {
		var lines []string
		for ts := from; ts < to; ts += s / 10 {
			gap := baselineGap(ts / (s / 10))
			if ts == spikeAt || ts == spikeAt+s/10 {
				gap = spikeGap
			}
			lines = append(lines, stormlogLine("peak", 0, 2, ts, "sample", gap), stormlogLine("peak", 1, 2, ts, "sample", baselineGap(ts/(s/10))))
		}
		require.NoError(t, lp.ConsumeLogs(ctx, stormlogLogs(lines)))
	}

	t0 := clk.now().UnixNano()
	samples(t0-10*s, t0, -1)
	first := round()
	require.Len(t, first, 1, "a series is reported at its first round")
	assert.Less(t, first[0][0], spikeGap)

	for i := int64(1); i <= 2; i++ { // two rounds within the interval
		clk.advance(10 * time.Second)
		spike := int64(-1)
		if i == 1 {
			spike = t0 + 3*s
		}
		samples(t0+(i-1)*10*s, t0+i*10*s, spike)
		assert.Empty(t, round(), "round %d: within hidden_peak_interval", i)
	}
	clk.advance(10 * time.Second)
	samples(t0+20*s, t0+30*s, -1)
	got := round()
	require.Len(t, got, 1)
	assert.Equal(t, spikeGap, got[0][0], "the spike, 17 s and 170 samples before the report")
	assert.Less(t, got[0][1], spikeGap, "rank 1 had no spike")

	require.NoError(t, mp.Shutdown(ctx))
	require.NoError(t, lp.Shutdown(ctx))
}
