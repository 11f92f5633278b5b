package attribution_test

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/internal/eventgen"
	"github.com/collectiveattr/collectiveattr/window"
)

// processCPU is the CPU time used by this process (all threads, GC included).
// The shared benchmark machine is often oversubscribed, so CPU time per op is
// reported next to wall time: it is the load-independent cost.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs f b.N times and reports CPU ms per op (and per-event ns when
// events > 0).
func loop(b *testing.B, events int, f func()) {
	b.ReportAllocs()
	runtime.GC()
	start := processCPU()
	for b.Loop() {
		f()
	}
	cpu := processCPU() - start
	b.ReportMetric(float64(cpu.Nanoseconds())/1e6/float64(b.N), "cpu-ms/op")
	if events > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(events), "cpu-ns/event")
	}
}

// BenchmarkAttribute measures the whole way (records streamed into a window,
// its snapshot attributed) on in-memory events: 3 000 samples per rank,
// 2 % synchronized spikes with markers. Per-event cost should stay flat from 16 to 1 024 ranks; at 1 024
// ranks the caller's 1 GB of pointer-holding Events makes each GC cycle
// costly, which shows up here (the processor keeps compact buffers instead).
func BenchmarkAttribute(b *testing.B) {
	cfg, err := attribution.ResolveConfig("medium", nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, ranks := range []int{16, 64, 256, 1024} {
		b.Run(fmt.Sprintf("ranks=%d", ranks), func(b *testing.B) {
			events := eventgen.Events(eventgen.Default(ranks))
			var n int
			loop(b, len(events), func() { n = len(window.AttributeReference(events, cfg, nil)) })
			if n == 0 || n%ranks != 0 {
				b.Fatalf("%d results, want one per rank and spike step", n)
			}
		})
	}
}

// BenchmarkAttributeInput isolates steps S4–S12 on the columns a window's
// snapshot hands over, the form the streaming processor re-evaluates every
// few seconds. Without the
// caller's []Event on the heap it also shows the engine's own scaling.
func BenchmarkAttributeInput(b *testing.B) {
	cfg, _ := attribution.ResolveConfig("medium", nil)
	for _, ranks := range []int{16, 64, 256, 1024} {
		b.Run(fmt.Sprintf("ranks=%d", ranks), func(b *testing.B) {
			events := eventgen.Events(eventgen.Default(ranks))
			n := len(events)
			s := window.NewStream(window.ReferenceMode, false)
			s.AddEvents(events)
			var sc window.Scratch
			in := s.Job().Snapshot(&sc).Input
			events, s = nil, nil
			loop(b, n, func() { attribution.AttributeColumns(in, cfg, nil) })
		})
	}
}
