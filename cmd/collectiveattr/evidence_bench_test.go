package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/internal/eventgen"
)

// BenchmarkAttributeCommandModes runs `collectiveattr attribute` in both
// modes on the 64 ranks × 3 000 samples file, so the ratio of the two is
// measured in one run.
func BenchmarkAttributeCommandModes(b *testing.B) {
	path := filepath.Join(b.TempDir(), "run.jsonl")
	if err := os.WriteFile(path, eventgen.JSONL(eventgen.Default(64)), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"reference", "evidence"} {
		b.Run(mode, func(b *testing.B) {
			var stderr strings.Builder
			b.ReportAllocs()
			start := processCPU()
			for b.Loop() {
				if code := run([]string{"attribute", "--mode", mode, path}, nil, io.Discard, &stderr); code != 0 {
					b.Fatalf("exit %d: %s", code, stderr.String())
				}
			}
			b.ReportMetric(float64((processCPU()-start).Nanoseconds())/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}
