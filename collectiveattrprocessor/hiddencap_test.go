package collectiveattrprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
)

// TestHiddenPointsPastTheCapAreCounted: past the per-round cap of
// gpu.memory.hidden points, each rank's newest point is still reported (a
// large job's every rank shows its current hidden memory) and the others
// are counted (hidden_points_dropped), not silently lost.
func TestHiddenPointsPastTheCapAreCounted(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	p := newPipelines(t, createDefaultConfig().(*Config), tel)
	defer p.shutdown(t)
	c := p.core
	var b batchCounts
	c.mu.Lock()
	for i := range int64(maxHiddenPointsPerTick) {
		c.addHidden(&b, "j", 0, i, 2*gib, gib, 0)
	}
	// Past the cap: rank 0 three more points, rank 1 two (the later one
	// first: points of a rank need not arrive in time order), job "a" one.
	for _, pt := range []struct {
		job      string
		rank, ts int64
		usedGiB  int64
	}{{"j", 0, 100_000, 3}, {"j", 1, 100_002, 5}, {"j", 0, 100_001, 4}, {"j", 1, 100_001, 6}, {"a", 7, 99, 2}, {"j", 0, 100_003, 7}} {
		c.addHidden(&b, pt.job, pt.rank, pt.ts, pt.usedGiB*gib, gib, 0)
	}
	hidden := c.takeHiddenLocked()
	c.mu.Unlock()
	require.Len(t, hidden, maxHiddenPointsPerTick+3)
	assert.Equal(t, []output.HiddenPoint{
		{JobID: "a", Rank: 7, TimestampNs: 99, Bytes: gib},
		{JobID: "j", Rank: 0, TimestampNs: 100_003, Bytes: 6 * gib},
		{JobID: "j", Rank: 1, TimestampNs: 100_002, Bytes: 4 * gib},
	}, hidden[maxHiddenPointsPerTick:], "each rank's newest past the cap, by job and rank")
	c.tel.addBatch(context.Background(), signalMetrics, &b)
	metadatatest.AssertEqualProcessorCollectiveattrHiddenPointsDropped(t, tel, []metricdata.DataPoint[int64]{{Value: 3}}, metricdatatest.IgnoreTimestamp())

	c.mu.Lock()
	defer c.mu.Unlock()
	c.addHidden(&b, "j", 0, 200_000, 2*gib, gib, 0)
	assert.Len(t, c.takeHiddenLocked(), 1, "the next round starts below the cap, with no newest points left over")
}

// TestHiddenRunsPastTheCapAsPointByPoint: a sample run that crosses the cap
// and runs past it give the points, peaks and dropped count that the same
// samples give one by one.
func TestHiddenRunsPastTheCapAsPointByPoint(t *testing.T) {
	runs := []ingest.SampleRun{
		{JobID: "j", Rank: 0, Samples: hiddenSamples(100, 5, 3)},
		{JobID: "j", Rank: 1, Samples: hiddenSamples(100, 2, 1)},
		{JobID: "j", Rank: 0, Samples: hiddenSamples(90, 3, 7)},  // older than rank 0's newest
		{JobID: "j", Rank: 0, Samples: hiddenSamples(105, 2, 2)}, // newer again
		{JobID: "a", Rank: 7, Samples: hiddenSamples(50, 2, 4)},
	}
	type outcome struct {
		hidden  []output.HiddenPoint
		peaks   []output.PeakPoint
		dropped int64
	}
	play := func(byRun bool) outcome {
		p := newPipelines(t, createDefaultConfig().(*Config), componenttest.NewTelemetry())
		defer p.shutdown(t)
		c := p.core
		var b batchCounts
		c.mu.Lock()
		defer c.mu.Unlock()
		for i := range int64(maxHiddenPointsPerTick - 3) {
			c.addHidden(&b, "k", 0, i, 2*gib, gib, 0)
		}
		for i := range runs {
			run := &runs[i]
			if byRun {
				c.addHiddenRun(&b, run, 1) // the first sample refused by the store
				continue
			}
			for _, s := range run.Samples[1:] {
				c.addHidden(&b, run.JobID, run.Rank, s.TimestampNs, s.DeviceUsed, s.AllocatorReserved, s.DeviceTotal)
			}
		}
		return outcome{c.takeHiddenLocked(), c.peaks.Due(1<<62, nil), b.hiddenDropped}
	}
	want, got := play(false), play(true)
	require.Len(t, want.hidden, maxHiddenPointsPerTick+3)
	require.Len(t, got.hidden, len(want.hidden))
	assert.Equal(t, want.hidden[maxHiddenPointsPerTick-4:], got.hidden[maxHiddenPointsPerTick-4:])
	assert.Equal(t, want.peaks, got.peaks)
	assert.Equal(t, want.dropped, got.dropped)
	assert.Equal(t, int64(9-3-3), got.dropped, "9 samples after the first of each run: 3 below the cap, the newest of each of 3 ranks")
}

// hiddenSamples is n samples from time ts on, 1 GiB reserved and used GiB
// growing from used, with a device total.
func hiddenSamples(ts, n, used int64) []ingest.SamplePoint {
	out := make([]ingest.SamplePoint, n)
	for i := range out {
		out[i] = ingest.SamplePoint{
			TimestampNs: ts + int64(i), DeviceUsed: (used + int64(i)) * gib, AllocatorReserved: gib,
			DeviceTotal: 80 * gib, Has: ingest.HasDeviceTotal,
		}
	}
	return out
}

// TestHiddenPointsOffKeepsNone: with gpu.memory.hidden turned off the
// processor keeps no point per sample (nothing to emit, none counted
// dropped), and the samples still make their ranks' peaks
// (gpu.memory.hidden.peak stays on).
func TestHiddenPointsOffKeepsNone(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Metrics.Output.GpuMemoryHidden.Enabled = false
	p := newPipelines(t, cfg, componenttest.NewTelemetry())
	defer p.shutdown(t)
	c := p.core
	var b batchCounts
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range int64(maxHiddenPointsPerTick + 2) {
		c.addHidden(&b, "j", 0, i, 2*gib, gib, 0)
	}
	run := ingest.SampleRun{JobID: "j", Rank: 1, Samples: hiddenSamples(100, 5, 3)}
	c.addHiddenRun(&b, &run, 0)
	assert.Empty(t, c.takeHiddenLocked())
	assert.Zero(t, b.hiddenDropped)
	peaks := c.peaks.Due(1<<62, nil)
	require.Len(t, peaks, 2)
	for _, pk := range peaks {
		assert.Positive(t, pk.HiddenBytes, "rank %d", pk.Rank)
	}
}
