package output

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// roundHidden is one 10 s round of ranks sampled at 10 Hz as exporters
// deliver it, the hidden memory moving by whole MiB: with ownClock each rank
// samples on its own clock (a phase in the 100 ms period and a jitter of up
// to a millisecond a sample, as in-process exporters do), else all ranks at
// the same instants. A second of each rank's samples in a row (an OTLP
// resource is one rank), the ranks one after another, then the next second.
func roundHidden(ranks int64, ownClock bool) []HiddenPoint {
	const t0 = 1767225600000000000
	hidden := make([]HiddenPoint, 0, ranks*100)
	x := uint64(0x9e3779b97f4a7c15)
	next := func() int64 { // xorshift: jitter and moves with no period a compressor could learn
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return int64(x >> 1)
	}
	for s := range int64(10) {
		for r := range ranks {
			phase := r * 7_919_117 % 100_000_000
			for k := range int64(10) {
				ts := t0 + s*1e9 + k*100e6
				if ownClock {
					ts += phase + next()%1_000_000
				}
				hidden = append(hidden, HiddenPoint{"llama-70b-pretrain-0042", r, ts, 1<<30 + next()%64<<20})
			}
		}
	}
	return hidden
}

// hiddenLayouts are a round's gpu.memory.hidden in the layouts the
// processor could emit without changing what a consumer reads.
func hiddenLayouts(ranks int64, ownClock bool) []struct {
	name string
	md   pmetric.Metrics
} {
	hidden := roundHidden(ranks, ownClock)
	build := func(h []HiddenPoint) pmetric.Metrics {
		md := pmetric.NewMetrics()
		testMetrics().Append(md, h, nil, nil, nil, nil, 0)
		return md
	}
	byRank := slices.Clone(hidden)
	slices.SortStableFunc(byRank, func(a, b HiddenPoint) int { return int(a.Rank - b.Rank) })
	byTime := slices.Clone(hidden)
	slices.SortStableFunc(byTime, func(a, b HiddenPoint) int {
		return int((a.TimestampNs-1767225600000000000)/100e6 - (b.TimestampNs-1767225600000000000)/100e6)
	})
	// The attributes rank first, then job.
	rankFirst := build(hidden)
	dps := rankFirst.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints()
	for i := range dps.Len() {
		a := dps.At(i).Attributes()
		job, _ := a.Get("training.job.id")
		rank, _ := a.Get("training.rank")
		j, r := job.Str(), rank.Int()
		a.Clear()
		a.PutInt("training.rank", r)
		a.PutStr("training.job.id", j)
	}
	// One metric a rank, its points in a row.
	perRank := build(byRank)
	ms := perRank.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	all := pmetric.NewMetric()
	ms.At(0).MoveTo(all)
	ms.RemoveIf(func(pmetric.Metric) bool { return true })
	src := all.Gauge().DataPoints()
	for i := 0; i < src.Len(); {
		m := ms.AppendEmpty()
		m.SetName(all.Name())
		m.SetDescription(all.Description())
		m.SetUnit(all.Unit())
		dst := m.SetEmptyGauge().DataPoints()
		rank, _ := src.At(i).Attributes().Get("training.rank")
		for ; i < src.Len(); i++ {
			if r, _ := src.At(i).Attributes().Get("training.rank"); r.Int() != rank.Int() {
				break
			}
			src.At(i).CopyTo(dst.AppendEmpty())
		}
	}
	return []struct {
		name string
		md   pmetric.Metrics
	}{
		{"emitted", build(hidden)},
		{"rank-runs", build(byRank)},
		{"interleaved", build(byTime)},
		{"rank-attribute-first", rankFirst},
		{"metric-per-rank", perRank},
	}
}

// exporterCompressors are the otlp exporter's compression settings as its
// gRPC client applies them (configgrpc v1.71.0): gzip is grpc's
// (compress/gzip, default level), zstd klauspost's with a 512 KiB window,
// snappy golang/snappy's framed writer.
func exporterCompressors() []struct {
	name     string
	compress func(w io.Writer, p []byte)
} {
	gz, _ := gzip.NewWriterLevel(io.Discard, gzip.DefaultCompression)
	zs, _ := zstd.NewWriter(nil, zstd.WithWindowSize(512*1024))
	sn := snappy.NewBufferedWriter(io.Discard)
	return []struct {
		name     string
		compress func(w io.Writer, p []byte)
	}{
		{"gzip", func(w io.Writer, p []byte) { gz.Reset(w); _, _ = gz.Write(p); _ = gz.Close() }},
		{"zstd", func(w io.Writer, p []byte) { zs.Reset(w); _, _ = zs.Write(p); _ = zs.Close() }},
		{"snappy", func(w io.Writer, p []byte) { sn.Reset(w); _, _ = sn.Write(p); _ = sn.Close() }},
	}
}

// BenchmarkHiddenCompression is the exporter's compression of a round's
// gpu.memory.hidden (an ExportMetricsServiceRequest), a point, by ranks,
// clocks, compressor and layout: cpu-ns/point the process's CPU (the
// zstd encoder compresses blocks on goroutines of its own, and the machine
// may be shared), B/point the compressed size.
func BenchmarkHiddenCompression(b *testing.B) {
	for _, ranks := range []int64{64, 512} {
		for _, ownClock := range []bool{true, false} {
			clock := map[bool]string{true: "own", false: "shared"}[ownClock]
			for _, l := range hiddenLayouts(ranks, ownClock) {
				payload, err := pmetricotlp.NewExportRequestFromMetrics(l.md).MarshalProto()
				if err != nil {
					b.Fatal(err)
				}
				points := l.md.DataPointCount()
				for _, c := range exporterCompressors() {
					b.Run(fmt.Sprintf("ranks=%d/clock=%s/%s/%s", ranks, clock, c.name, l.name), func(b *testing.B) {
						var out bytes.Buffer
						cpu0 := processCPU()
						for b.Loop() {
							out.Reset()
							c.compress(&out, payload)
						}
						b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N*points), "cpu-ns/point")
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*points), "ns/point")
						b.ReportMetric(float64(len(payload))/float64(points), "raw_B/point")
						b.ReportMetric(float64(out.Len())/float64(points), "B/point")
					})
				}
			}
		}
	}
}
