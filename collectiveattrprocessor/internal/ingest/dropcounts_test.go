package ingest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestExpiredPartnerPointsAreOrphaned: allocator points whose device-used
// points never come leave through the pending TTL, counted as orphaned
// (TakeOrphaned) where they used to vanish uncounted.
func TestExpiredPartnerPointsAreOrphaned(t *testing.T) {
	const t0 = int64(1767225600000000000)
	c, clk := newTestConverter(Config{PendingTTL: 10 * time.Second})
	got := convertMetrics(t, c, gaugeBatch(rank0, reserved(t0, 50), reserved(t0+100, 51),
		gaugePoint{name: "gpu.memory.allocator.allocated", ts: t0, value: 40}))
	assert.Empty(t, got.skips)
	assert.Zero(t, c.TakeOrphaned())
	clk.advance(11 * time.Second)
	assert.Zero(t, c.Expire(), "no device-used point was pending")
	assert.Equal(t, 3, c.TakeOrphaned(), "two reserved points and one allocated")
	assert.Zero(t, c.TakeOrphaned(), "taken once")
}
