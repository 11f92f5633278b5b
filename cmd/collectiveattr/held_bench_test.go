package main

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/internal/eventgen"
)

// BenchmarkHeldPerSample measures what `collectiveattr attribute` holds once
// a run is read, before it is attributed: the live heap of the read input
// per memory sample (held-B/sample), by mode, ranks and samples per rank
// (docs/sizing.md). The input's bytes are not counted: the CLI streams
// them.
func BenchmarkHeldPerSample(b *testing.B) {
	for _, mode := range []string{attribution.ModeReference, attribution.ModeEvidence} {
		for _, size := range []struct{ ranks, samples int }{{64, 3000}, {256, 3000}, {1024, 520}, {1024, 600}, {1024, 3000}} {
			name := "mode=" + mode + "/ranks=" + strconv.Itoa(size.ranks) + "/samples=" + strconv.Itoa(size.samples)
			b.Run(name, func(b *testing.B) {
				spec := eventgen.Spec{Ranks: size.ranks, Samples: size.samples, SpikeRate: 0.02, Markers: true, Identity: true, Lists: eventgen.ListsFirst, Seed: 1}
				data := eventgen.JSONL(spec)
				samples := size.ranks * size.samples
				var held uint64
				for b.Loop() {
					before := liveHeap()
					ri, err := readRun(bytes.NewReader(data), attributeOptions{mode: mode})
					if err != nil {
						b.Fatal(err)
					}
					held = liveHeap() - before
					runtime.KeepAlive(ri)
				}
				b.ReportMetric(float64(held)/float64(samples), "held-B/sample")
			})
		}
	}
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
