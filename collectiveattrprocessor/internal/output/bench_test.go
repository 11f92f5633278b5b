package output

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// benchItems is one evaluation's worth of results: 64 ranks of one job.
func benchItems() []Item {
	base := testItems()
	items := make([]Item, 64)
	for i := range items {
		items[i] = base[i%len(base)]
		items[i].JobID = "llama-70b-pretrain-0042"
		r := *items[i].Result
		r.Rank = int64(i)
		items[i].Result = &r
	}
	return items
}

func BenchmarkAppendTraces(b *testing.B) {
	items := benchItems()
	ids := NewRandomIDSource()
	b.ReportAllocs()
	for b.Loop() {
		AppendTraces(ptrace.NewTraces(), items, ids)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/result")
}

func BenchmarkAppendLogs(b *testing.B) {
	items := benchItems()
	b.ReportAllocs()
	for b.Loop() {
		AppendLogs(plog.NewLogs(), items, true)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/result")
}

func BenchmarkAppendMetrics(b *testing.B) {
	// One tick of 64 ranks at 10 Hz over 10 s: 6 400 hidden points.
	var hidden []HiddenPoint
	var counts []IntervalCount
	var latest []LatestResult
	for r := range int64(64) {
		for k := range int64(100) {
			hidden = append(hidden, HiddenPoint{"job", r, 1767225600000000000 + k*100_000_000, 1 << 30})
		}
		counts = append(counts, IntervalCount{"job", r, "collective_likely", 3, 1767225500000000000, "", ""})
		latest = append(latest, LatestResult{"job", r, "collective_likely", 1 << 30, 0.75, 1767225600000000000, "", ""})
	}
	m := testMetrics() // the processor keeps one
	b.ReportAllocs()
	for b.Loop() {
		m.Append(pmetric.NewMetrics(), hidden, nil, nil, counts, latest, 1767225610000000000)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(hidden)), "ns/hidden_point")
}

// BenchmarkHiddenPeaksObserve is the per-sample cost of keeping the peaks
// (core.go calls Observe for every formed sample), by ranks of one job and
// by how many samples of one rank arrive in a row (an OTLP resource is one
// rank: a batch holds runs of its samples; run=1 interleaves the ranks).
func BenchmarkHiddenPeaksObserve(b *testing.B) {
	for _, ranks := range []int64{64, 1024, 16384} {
		for _, run := range []int64{1, 10} {
			b.Run(fmt.Sprintf("ranks=%d/run=%d", ranks, run), func(b *testing.B) {
				p := NewHiddenPeaks(30e9)
				b.ReportAllocs()
				var i int64
				for b.Loop() {
					r := i / run % ranks
					p.Observe("job-1", r, 40<<30+i%(1<<20), 32<<30, 80<<30)
					i++
				}
			})
		}
	}
}

// BenchmarkRankIndex is the cost of finding one sample run's entry as
// HiddenPeaks and newestHidden do (Indexed, then GetOrAdd when not indexed),
// by ranks of one job, with a second job's run every `other` runs (0:
// none): each such run makes the other job the indexed one and back, and
// the first job's ranks are then found through the map once each.
func BenchmarkRankIndex(b *testing.B) {
	for _, ranks := range []int64{1024, 16384} {
		for _, other := range []int64{0, 8} {
			b.Run(fmt.Sprintf("ranks=%d/other=%d", ranks, other), func(b *testing.B) {
				var x RankIndex[int32]
				add := func(string, int64) int32 { return 1 }
				b.ReportAllocs()
				var i int64
				for b.Loop() {
					job := "job-1"
					if other > 0 && i%other == 0 {
						job = "job-2"
					}
					if _, found := x.Indexed(job, i%ranks); !found {
						x.GetOrAdd(job, i%ranks, add)
					}
					i++
				}
			})
		}
	}
}
