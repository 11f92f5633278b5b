package ingest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// TestJoinAfterExpiry: rows the pending TTL drops are gone for later
// batches, a late point of a new role brings its row back, and the rows
// kept are those the later batches' points still need.
func TestJoinAfterExpiry(t *testing.T) {
	const t0 = int64(1767225600000000000)
	ms := int64(time.Millisecond)
	c, clk := newTestConverter(Config{PendingTTL: time.Second})
	point := func(name string, ts int64) gaugePoint { return gaugePoint{name: name, ts: t0 + ts*ms, value: 1000} }
	batch := func(names []string, times ...int64) pmetric.Metrics {
		var pts []gaugePoint
		for _, name := range names {
			for _, ts := range times {
				pts = append(pts, point(name, ts))
			}
		}
		return gaugeBatch(rank0, pts...)
	}
	const usedName, reservedName, activeName = "gpu.memory.device.used", "gpu.memory.allocator.reserved", "gpu.memory.allocator.active"
	for _, step := range []struct {
		md      pmetric.Metrics
		advance time.Duration
	}{
		{batch([]string{usedName, reservedName}, 0, 40, 80, 120, 160), 600 * time.Millisecond},
		// A late point of a new role: the row at 40 ms arrives anew.
		{batch([]string{activeName}, 40), 700 * time.Millisecond},
		// Every row but the one at 40 ms has expired.
		{batch([]string{usedName, reservedName, activeName}, 100, 120), 0},
		{batch([]string{usedName, reservedName, activeName}, 200, 240), 0},
	} {
		convertMetrics(t, c, step.md)
		clk.advance(step.advance)
		c.Expire()
	}
	require.Len(t, c.metrics.series[seriesKey{job: "j", rank: 0}].rows, 5, "40, 100, 120, 200, 240 ms")
}
