package collectiveattrprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

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
