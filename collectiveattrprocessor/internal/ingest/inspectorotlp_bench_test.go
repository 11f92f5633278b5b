package ingest

import (
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/collectiveattr/collectiveattr/internal/cpuclock"
	"github.com/collectiveattr/collectiveattr/internal/eventgen"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// BenchmarkConvertInspectorOTLP converts a batch of the plugin's verbose
// OTLP export for 8 and 64 ranks (one resource per rank, 32 ops each, an
// exec-time and a bandwidth point per op) joined by (node, pid),
// alternating with decoding as many stormlog sample records, and reports
// each one's ns per op (a record) and their ratio.
func BenchmarkConvertInspectorOTLP(b *testing.B) {
	stormlog := eventgen.JSONL(eventgen.Spec{Ranks: 1, Samples: 1, Seed: 1})
	const perRank = 32
	for _, ranks := range []int64{8, 64} {
		b.Run("ranks="+itoa(ranks), func(b *testing.B) {
			md := pmetric.NewMetrics()
			c, _ := newTestConverter(Config{})
			for r := range ranks {
				c.Metrics(rankMetrics("job-a", r, "node01", 100+r))(func(Read) bool { return true })
				var points []map[string]string
				for k := range int64(perRank) {
					points = append(points, collPoint(itoa(k), t0Us+k*10_000))
				}
				inspectorOTLP(map[string]any{"process.pid": 100 + r}, points...).ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
			}
			ops := int(ranks) * perRank
			records := 0
			emit := func(*Record) { records++ }
			skip := func(s Skip) { b.Fatal(s) }
			var (
				d               telemetry.Decoder
				otlpNs, stormNs time.Duration
			)
			// CPU time of this thread: other processes' load does not count.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			for b.Loop() {
				t0 := cpuclock.Thread()
				c.insp.convertInspectorMetrics(md, emit, skip)
				t1 := cpuclock.Thread()
				for range ops {
					if _, err := d.Decode(stormlog); err != nil {
						b.Fatal(err)
					}
				}
				otlpNs += t1 - t0
				stormNs += cpuclock.Thread() - t1
			}
			if records != 2*b.N*ops { // reference mode: a start and an end marker per op
				b.Fatalf("%d markers, want %d", records, 2*b.N*ops)
			}
			n := float64(b.N * ops)
			b.ReportMetric(float64(otlpNs.Nanoseconds())/n, "otlp-ns/record")
			b.ReportMetric(float64(stormNs.Nanoseconds())/n, "stormlog-ns/record")
			b.ReportMetric(float64(otlpNs)/float64(stormNs), "otlp/stormlog")
		})
	}
}
