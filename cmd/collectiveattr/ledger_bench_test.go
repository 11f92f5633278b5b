package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// BenchmarkLedgerCommand runs `collectiveattr attribute --mode evidence`
// and `collectiveattr ledger` on the same file (a 64-rank quality job with
// NCCL's accounting), so the ratio of the two is measured in one run.
func BenchmarkLedgerCommand(b *testing.B) {
	shape := jobsim.DefaultQualityShape()
	shape.Ranks = 64
	c, err := jobsim.GenerateQualityCase("noisy", 1, shape, true)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "run.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := jobsim.WriteEvents(f, c.Events); err != nil {
		b.Fatal(err)
	}
	f.Close()
	c = nil
	for _, args := range [][]string{{"attribute", "--mode", "evidence"}, {"ledger"}} {
		b.Run(args[0], func(b *testing.B) {
			var stderr strings.Builder
			b.ReportAllocs()
			start := processCPU()
			for b.Loop() {
				if code := run(append(args, "-q", path), nil, io.Discard, &stderr); code != 0 {
					b.Fatalf("exit %d: %s", code, stderr.String())
				}
			}
			b.ReportMetric(float64((processCPU()-start).Nanoseconds())/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}
