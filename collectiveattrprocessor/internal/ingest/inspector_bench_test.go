package ingest

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
)

// BenchmarkConvertInspectorLogs: verbose Inspector records of 16 joined
// ranks, as filelog gives them (string bodies, a file path each).
func BenchmarkConvertInspectorLogs(b *testing.B) {
	const ranks, perRank = 16, 64
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for r := range int64(ranks) {
		for k := range int64(perRank) {
			lr := lrs.AppendEmpty()
			lr.Body().SetStr(inspectorLine(inspectorOp("node01", 100+r, r%2, t0Us+k*10_000)))
			lr.Attributes().PutStr("log.file.path", "/d/node01-pid"+itoa(100+r)+".log")
		}
	}
	c, _ := newTestConverter(Config{})
	for r := range int64(ranks) {
		c.Metrics(rankMetrics("job-a", r, "node01", 100+r))(func(Read) bool { return true })
	}
	records := 0
	emit := func(*Record) { records++ }
	skip := func(s Skip) { b.Fatal(s) }
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		c.logs.convertLogs(ld, emit, skip)
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*ranks*perRank), "ns/record")
	b.ReportMetric(float64(records)/float64(n*ranks*perRank), "markers/record")
}

// BenchmarkLearnResourceProcesses is what the (host, pid) join costs a
// metrics batch of in-process exporters (one resource per rank), beside
// its conversion (BenchmarkConvertMetrics/in_process).
func BenchmarkLearnResourceProcesses(b *testing.B) {
	md := inProcessBatch(0)
	rms := md.ResourceMetrics()
	c, _ := benchConverter()
	b.ReportAllocs()
	for b.Loop() {
		c.insp.learnMetricsProcesses(md)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rms.Len()), "ns/resource")
	b.ReportMetric(float64(md.DataPointCount()), "points/op")
}
