package collectiveattrprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
)

// TestHiddenPointsPastTheCapAreCounted: gpu.memory.hidden points past the
// per-round cap are counted (hidden_points_dropped) where they used to
// vanish.
func TestHiddenPointsPastTheCapAreCounted(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	p := newPipelines(t, createDefaultConfig().(*Config), tel)
	defer p.shutdown(t)
	c := p.core
	var b batchCounts
	c.mu.Lock()
	for i := range int64(maxHiddenPointsPerTick + 3) {
		c.addHidden(&b, "j", 0, i, 2*gib, gib, 0)
	}
	require.Len(t, c.hidden, maxHiddenPointsPerTick)
	c.mu.Unlock()
	c.tel.addBatch(context.Background(), signalMetrics, &b)
	metadatatest.AssertEqualProcessorCollectiveattrHiddenPointsDropped(t, tel, []metricdata.DataPoint[int64]{{Value: 3}}, metricdatatest.IgnoreTimestamp())
}
