package telemetry_test

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/internal/eventgen"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDecodeJSONL decodes the 64 ranks × 3 000 samples run
// (~113 MB of JSON Lines), the part that dominates `collectiveattr
// attribute`. CPU time is reported too: the shared machine is often loaded.
func BenchmarkDecodeJSONL(b *testing.B) {
	data := eventgen.JSONL(eventgen.Default(64))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	runtime.GC()
	start := processCPU()
	for b.Loop() {
		events, err := telemetry.DecodeJSONL(data)
		if err != nil || len(events) == 0 {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU()-start).Nanoseconds())/1e6/float64(b.N), "cpu-ms/op")
}

// BenchmarkDecodeRecord decodes one typical sample record.
func BenchmarkDecodeRecord(b *testing.B) {
	data := eventgen.JSONL(eventgen.Spec{Ranks: 1, Samples: 1, Seed: 1})
	var d telemetry.Decoder
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
