package attribution

import (
	"syscall"
	"testing"

	"github.com/collectiveattr/collectiveattr/internal/eventgen"
)

// BenchmarkRankStats measures the per-rank median/MAD on one generated rank
// (3 000 samples).
func BenchmarkRankStats(b *testing.B) {
	in := oldBuildInput(eventgen.Events(eventgen.Default(4)))
	rs := in.Ranks[0]
	g := make([]float64, len(rs.Samples))
	for i, s := range rs.Samples {
		g[i] = float64(s.GapBytes)
	}
	scratch := newStatsScratch(len(g))
	b.ReportAllocs()
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	for b.Loop() {
		computeRankStats(g, scratch)
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}
