package report

import (
	"io"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/internal/eventgen"
	"github.com/collectiveattr/collectiveattr/window"
)

// benchRanks keeps the benchmarks short; the browser test renders the
// 1 024-rank job (make test-report REPORT_LARGE=1).
const benchRanks = 128

// BenchmarkBuilderAdd is the per-event cost of collecting a job.
func BenchmarkBuilderAdd(b *testing.B) {
	events := eventgen.Events(eventgen.Default(benchRanks))
	b.ReportAllocs()
	for b.Loop() {
		bl := NewBuilder(false)
		for i := range events {
			bl.Add(&events[i])
		}
		_ = bl.Job()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
}

// BenchmarkRender is the page of a job of benchRanks × 3 000 samples and
// its results.
func BenchmarkRender(b *testing.B) {
	events := eventgen.Events(eventgen.Default(benchRanks))
	bl := NewBuilder(false)
	for i := range events {
		bl.Add(&events[i])
	}
	job := bl.Job()
	cfg, _ := attribution.Preset("medium")
	attributed := window.AttributeReference(events, cfg, nil)
	results := make([]Result, len(attributed))
	for i := range attributed {
		var err error
		if results[i], err = ParseResult(attribution.AppendResultJSON(nil, &attributed[i], false)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Render(io.Discard, job, results, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
