package ingest

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/pdatashift"
	"github.com/collectiveattr/collectiveattr/evidence"
)

// evidenceTraceBatch is traceBatch with the collective identity on every
// nccl span (communicator, sequence number, op, size, members), as an
// instrumented job sends it for evidence mode.
func evidenceTraceBatch(sec int) ptrace.Traces {
	td := traceBatch(sec)
	for _, rs := range td.ResourceSpans().All() {
		seq := int64(sec) * 100
		for _, sp := range rs.ScopeSpans().At(0).Spans().All() {
			if sp.Name() != "nccl:all_reduce" {
				continue
			}
			a := sp.Attributes()
			a.PutStr(evidence.KeyCommID, "0x7f3a9c0e5b21d4")
			a.PutInt(evidence.KeySeq, seq)
			a.PutStr(evidence.KeyOp, "all_reduce")
			a.PutInt(evidence.KeyMessageBytes, 512<<20)
			a.PutInt(evidence.KeyCommNRanks, benchRanks)
			ranks := a.PutEmptySlice(evidence.KeyCommRanks)
			for r := range benchRanks {
				ranks.AppendEmpty().SetInt(int64(r))
			}
			seq++
		}
	}
	return td
}

// BenchmarkConvertTracesEvidence is BenchmarkConvertTraces in evidence mode
// on spans that carry their collective identity: each marker span is read
// for its nccl.* attributes and gives one marker interval with it.
func BenchmarkConvertTracesEvidence(b *testing.B) {
	batches := make([]ptrace.Traces, benchBatches)
	for i := range batches {
		batches[i] = evidenceTraceBatch(i)
	}
	spans := batches[0].SpanCount()
	c, clk := benchConverter()
	c.cfg.Reads.CollectiveMarkers = true
	records, identified := 0, 0
	emit := func(*Record) { records++ }
	emitMarkers := func(run *MarkerRun) {
		records += len(run.Spans)
		for i := range run.Spans {
			for _, id := range run.Spans[i].Identities {
				if id.Valid {
					identified++
				}
			}
		}
	}
	skip := func(Skip) {}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		batch := batches[i%benchBatches]
		c.traces.convertTraces(batch, emit, emitMarkers, skip)
		i++
		b.StopTimer()
		pdatashift.Traces(batch, benchBatches*time.Second)
		clk.t = clk.t.Add(time.Second)
		b.StartTimer()
	}
	if identified == 0 {
		b.Fatal("no marker carried an identity")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i*spans), "ns/span")
	b.ReportMetric(float64(spans), "spans/op")
	b.ReportMetric(float64(records)/float64(i), "records/op")
}

// BenchmarkConvertMetricsAccounting is BenchmarkConvertMetrics/in_process
// in evidence mode with NCCL's accounting gauge beside the memory gauges
// (one communicator, at the sampling rate).
func BenchmarkConvertMetricsAccounting(b *testing.B) {
	batches := make([]pmetric.Metrics, benchBatches)
	for i := range batches {
		md := inProcessBatch(i)
		for _, rm := range md.ResourceMetrics().All() {
			ms := rm.ScopeMetrics().At(0).Metrics()
			used := ms.At(0).Gauge().DataPoints()
			m := ms.AppendEmpty()
			m.SetName(AccountingMetric)
			m.SetUnit("By")
			dps := m.SetEmptyGauge().DataPoints()
			for _, p := range used.All() {
				dp := dps.AppendEmpty()
				dp.SetTimestamp(p.Timestamp())
				dp.SetIntValue(3 << 30)
				dp.Attributes().PutStr(evidence.KeyCommID, "0x7f3a9c0e5b21d4")
			}
		}
		batches[i] = md
	}
	points := batches[0].DataPointCount()
	c, clk := benchConverter()
	c.cfg.Reads.Accounting = true
	samples, accounting := 0, 0
	emit := func(run *SampleRun) { samples += len(run.Samples) }
	emitAccounting := func(*Record) { accounting++ }
	skip := func(Skip) {}
	c.metrics.convertMetricsAccounting(batches[0], emit, emitAccounting, skip)
	samples, accounting = 0, 0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		batch := batches[i%benchBatches]
		c.metrics.convertMetricsAccounting(batch, emit, emitAccounting, skip)
		i++
		b.StopTimer()
		pdatashift.Metrics(batch, benchBatches*time.Second)
		clk.t = clk.t.Add(time.Second)
		b.StartTimer()
	}
	if accounting == 0 {
		b.Fatal("no accounting point")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i*points), "ns/point")
	b.ReportMetric(float64(samples)/float64(i), "samples/op")
	b.ReportMetric(float64(accounting)/float64(i), "accounting/op")
}
