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

// TestProcessMemoryFormsSamples: a rank that reports its own process's GPU
// memory has its samples formed at those points, with or without a
// device-wide used point of its own, and every sample says so; a rank that
// does not keeps device-wide samples that say so too.
func TestProcessMemoryFormsSamples(t *testing.T) {
	const t0 = int64(1767225600000000000)
	rank := map[string]any{"training.job.id": "j", "training.rank": int64(1), "host.name": "node-a", "gpu.index": int64(1)}
	names := DefaultMetricNames().ProcessUsed
	require.Equal(t, []string{"process.gpu.memory.usage", "process.gpu.memory.used", "gpu.memory.process.used"}, names)
	for _, name := range names {
		process := func(ts, v int64) gaugePoint { return gaugePoint{name: name, ts: ts, value: v} }
		c, _ := newTestConverter(Config{})
		got := convertMetrics(t, c, gaugeBatch(rank, reserved(t0, 20<<30), process(t0, 24<<30),
			reserved(t0+1e9, 20<<30), process(t0+1e9, 25<<30)))
		require.Empty(t, got.skips)
		require.Len(t, got.samples, 2, "%s: process points form samples without a device-used point", name)
		for i, want := range []int64{24 << 30, 25 << 30} {
			assert.Equal(t, want, got.samples[i].DeviceUsed)
			assert.NotZero(t, got.samples[i].Has&HasProcessUsed, "%s: sample %d says its used memory is the process's", name, i)
		}
	}

	c, _ := newTestConverter(Config{})
	got := convertMetrics(t, c, gaugeBatch(rank, reserved(t0, 20<<30), used(t0, 27<<30)))
	require.Len(t, got.samples, 1)
	assert.Zero(t, got.samples[0].Has&HasProcessUsed, "a device-used sample is device-wide")
}

// TestProcessMemoryOutranksJoinedDeviceWidePoints: the rank on GPU 0 reports
// its process's memory once a second, and DCGM's device-wide points for GPU
// 0 (which hold the other ranks' contexts) join it by UUID half a second
// off, beyond sample_join_tolerance. Its samples are its process's, at its
// own times only: a DCGM point forms no sample of its own, which would put
// the other ranks' contexts into its hidden memory every other second (the
// points are orphaned: none of the rank's samples was within the
// tolerance). A
// DCGM point at a process point's time still gives the device total
// (used + free + framebuffer reserved, all device-wide).
func TestProcessMemoryOutranksJoinedDeviceWidePoints(t *testing.T) {
	const t0 = int64(1767225600000000000)
	const uuid = "GPU-4c226d4d-8129-a7cf-fecd-daa9018b4b40"
	rank0 := map[string]any{"training.job.id": "j", "training.rank": int64(0), "host.name": "node-a",
		"gpu.index": int64(0), "gpu.uuid": uuid}
	own, others := int64(24<<30), int64(7*500<<20)
	dcgm := func(name string, ts, mib int64) gaugePoint {
		return gaugePoint{name: name, ts: ts, value: mib, attrs: map[string]any{"gpu": "0", "UUID": uuid, "Hostname": "node-a"}}
	}
	process := func(ts int64) gaugePoint { return gaugePoint{name: "process.gpu.memory.usage", ts: ts, value: own} }

	c, _ := newTestConverter(Config{})
	var samples []SamplePoint
	for s := range int64(4) {
		ts := t0 + s*1e9
		got := convertMetrics(t, c, gaugeBatch(rank0, reserved(ts, 20<<30), process(ts)))
		if s > 0 {
			// The previous second's DCGM points served no sample.
			assert.Equal(t, []SkipReason{SkipOrphaned, SkipOrphaned, SkipOrphaned}, got.reasons())
		}
		samples = append(samples, got.samples...)
		off := ts + 500e6
		if s == 3 {
			off = ts // the last second's DCGM point shares the process point's time
		}
		got = convertMetrics(t, c, gaugeBatch(map[string]any{"service.name": "dcgm-exporter"},
			dcgm("DCGM_FI_DEV_FB_USED", off, (own+others)/mibBytes), dcgm("DCGM_FI_DEV_FB_FREE", off, 40000),
			dcgm("DCGM_FI_DEV_FB_RESERVED", off, 500)))
		samples = append(samples, got.samples...)
	}
	require.Len(t, samples, 4, "one sample per process point, none at DCGM's times")
	for i, p := range samples {
		assert.Equal(t, t0+int64(i)*1e9, p.TimestampNs)
		assert.Equal(t, own, p.DeviceUsed, "sample %d: the process's memory, not the device's", i)
		assert.NotZero(t, p.Has&HasProcessUsed)
	}
	// Samples are formed when a batch joins: the last second's DCGM point
	// came after its process point's sample, so no total there. Send both
	// in one batch.
	c, _ = newTestConverter(Config{})
	require.Empty(t, convertMetrics(t, c, gaugeBatch(rank0, reserved(t0, 20<<30))).skips)
	got := convertMetrics(t, c, gaugeBatch(nil,
		dcgm("DCGM_FI_DEV_FB_USED", t0+1e9, (own+others)/mibBytes), dcgm("DCGM_FI_DEV_FB_FREE", t0+1e9, 40000),
		dcgm("DCGM_FI_DEV_FB_RESERVED", t0+1e9, 500)))
	require.Empty(t, got.samples, "device-wide points alone are pending, not yet known to be superseded")
	got = convertMetrics(t, c, gaugeBatch(rank0, reserved(t0+1e9, 20<<30), process(t0+1e9)))
	require.Len(t, got.samples, 1)
	p := got.samples[0]
	assert.Equal(t, own, p.DeviceUsed)
	assert.NotZero(t, p.Has&HasDeviceTotal)
	assert.Equal(t, own+others+(40000+500)*mibBytes, p.DeviceTotal, "total from the device-wide used")
}
