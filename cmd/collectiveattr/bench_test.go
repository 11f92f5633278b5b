package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/internal/eventgen"
)

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAttributeCommand runs `collectiveattr attribute FILE` in process
// on the 64 ranks × 3 000 samples file (~113 MB of JSON Lines,
// generated, not committed): read, decode, attribute, write.
func BenchmarkAttributeCommand(b *testing.B) {
	path := filepath.Join(b.TempDir(), "run.jsonl")
	if err := os.WriteFile(path, eventgen.JSONL(eventgen.Default(64)), 0o600); err != nil {
		b.Fatal(err)
	}
	var stderr strings.Builder
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		if code := run([]string{"attribute", path}, nil, io.Discard, &stderr); code != 0 {
			b.Fatalf("exit %d: %s", code, stderr.String())
		}
	}
	b.ReportMetric(float64((processCPU()-start).Nanoseconds())/1e6/float64(b.N), "cpu-ms/op")
}
