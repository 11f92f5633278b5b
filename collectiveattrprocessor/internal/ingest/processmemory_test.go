package ingest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProcessMemoryStandsForDeviceUsed: a rank that reports its own
// process's GPU memory (process.gpu.memory.usage) has it stand for device
// used, which includes the other ranks' contexts on its GPU ("every rank
// opens a context on GPU 0"); a rank that does not keeps device used. A
// per-process point that names no rank (an NVML node agent's, joined by
// host and GPU) may be any process's: it is unjoinable.
func TestProcessMemoryStandsForDeviceUsed(t *testing.T) {
	const ts = int64(1767225600000000000)
	rank0 := map[string]any{"training.job.id": "j", "training.rank": int64(0), "host.name": "node-a", "gpu.index": int64(0)}
	others := int64(7 * 500 << 20) // seven other ranks' contexts on GPU 0
	own := int64(24 << 30)
	process := gaugePoint{name: "process.gpu.memory.usage", ts: ts, value: own}

	c, _ := newTestConverter(Config{})
	got := convertMetrics(t, c, gaugeBatch(rank0, reserved(ts, 20<<30), used(ts, own+others), process))
	require.Empty(t, got.skips)
	require.Len(t, got.records, 1)
	assert.Equal(t, own, got.records[0].Event.DeviceUsedBytes.Value, "hidden memory is the rank's own process's")

	c, _ = newTestConverter(Config{})
	got = convertMetrics(t, c, gaugeBatch(rank0, reserved(ts, 20<<30), used(ts, own+others)))
	require.Len(t, got.records, 1)
	assert.Equal(t, own+others, got.records[0].Event.DeviceUsedBytes.Value, "without it: device-wide")

	// A node agent's per-process point for GPU 0 of node-a: no rank of its own.
	agent := gaugePoint{name: "process.gpu.memory.usage", ts: ts, value: 500 << 20,
		attrs: map[string]any{"host.name": "node-a", "gpu.index": int64(0), "process.pid": int64(4242)}}
	got = convertMetrics(t, c, gaugeBatch(nil, agent))
	assert.Equal(t, []SkipReason{SkipUnjoinable}, got.reasons())
	assert.Contains(t, got.skips[0].Detail, "per-process")
}
