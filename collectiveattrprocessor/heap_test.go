package collectiveattrprocessor

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// heapRanks × heapSamples is the buffered job of BenchmarkBufferedSampleHeap:
// 1 024 ranks with a full 5-minute window at 10 Hz.
const (
	heapRanks   = 1024
	heapSamples = 3000
)

// heapBatch is one second (10 collections) of device used, device total and
// allocator reserved gauges of every rank, from startNs.
func heapBatch(startNs int64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	for r := range int64(heapRanks) {
		rm := md.ResourceMetrics().AppendEmpty()
		ra := rm.Resource().Attributes()
		ra.PutStr("training.job.id", "heap")
		ra.PutInt("training.rank", r)
		ra.PutInt("training.world_size", heapRanks)
		ra.PutStr("host.name", fmt.Sprintf("node-%d", r/8))
		ms := rm.ScopeMetrics().AppendEmpty().Metrics()
		for _, name := range []string{"gpu.memory.device.used", "gpu.memory.device.total", "gpu.memory.allocator.reserved"} {
			m := ms.AppendEmpty()
			m.SetName(name)
			m.SetUnit("By")
			dps := m.SetEmptyGauge().DataPoints()
			for c := range int64(10) {
				dp := dps.AppendEmpty()
				ts := startNs + c*int64(100*time.Millisecond)
				dp.SetTimestamp(pcommon.Timestamp(ts))
				v := int64(baseReserved)
				switch name {
				case "gpu.memory.device.used":
					v += baselineGap(ts / int64(100*time.Millisecond))
				case "gpu.memory.device.total":
					v = deviceTotal
				}
				dp.SetIntValue(v)
			}
		}
	}
	return md
}

// BenchmarkBufferedSampleHeap reports the Go heap in use after a garbage
// collection per buffered sample, for a metrics processor holding
// heapRanks × heapSamples samples (the bytes the processor adds to the heap
// the empty processor had): "filled" right after the samples arrived,
// "evaluated" after one evaluation round of the job (the evaluation's
// scratch space is kept for the next round), in each mode (evidence mode
// keeps the engine's baseline cache per sample once evaluated).
func BenchmarkBufferedSampleHeap(b *testing.B) {
	for _, mode := range []AttributionMode{ModeReference, ModeEvidence} {
		b.Run(string(mode), func(b *testing.B) { benchBufferedSampleHeap(b, mode) })
	}
}

func benchBufferedSampleHeap(b *testing.B, mode AttributionMode) {
	for b.Loop() {
		var before, filled, evaluated runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		cfg := createDefaultConfig().(*Config)
		cfg.EvaluationInterval = time.Hour
		cfg.Mode = mode
		f := newFactory(defaultClock())
		p, err := f.processorFactory().CreateMetrics(context.Background(), nopSettings(), cfg, consumertest.NewNop())
		if err != nil {
			b.Fatal(err)
		}
		c := f.cores[cfg]
		start := time.Now().Add(-10*time.Minute).UnixNano() / int64(time.Second) * int64(time.Second)
		for s := range int64(heapSamples / 10) {
			if err := p.ConsumeMetrics(context.Background(), heapBatch(start+s*int64(time.Second))); err != nil {
				b.Fatal(err)
			}
		}
		if got := bufferedEvents(c); got != heapRanks*heapSamples {
			b.Fatalf("%d events buffered, want %d", got, heapRanks*heapSamples)
		}
		runtime.GC()
		runtime.ReadMemStats(&filled)
		if err := evaluateOnce(c); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&evaluated)
		const n = heapRanks * heapSamples
		b.ReportMetric(float64(filled.HeapInuse-before.HeapInuse)/n, "filled-inuse-B/sample")
		b.ReportMetric(float64(filled.HeapAlloc-before.HeapAlloc)/n, "filled-live-B/sample")
		b.ReportMetric(float64(evaluated.HeapInuse-before.HeapInuse)/n, "evaluated-inuse-B/sample")
		b.ReportMetric(float64(evaluated.HeapAlloc-before.HeapAlloc)/n, "evaluated-live-B/sample")
		runtime.KeepAlive(p)
		if err := p.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// evaluateOnce runs one evaluation round of c.
func evaluateOnce(c *core) error {
	return c.evaluate(context.Background(), false)
}

// bufferedEvents is the number of entries c buffers.
func bufferedEvents(c *core) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _, events := c.store.Sizes()
	return events
}
