package collectiveattrprocessor

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// BenchmarkConsumeLogsStormlog reports ns per stormlog record of a job's
// file read by filelog (record numbers included) through a logs processor,
// in each mode: the records of a 40-50 s, 16-rank quality case in batches
// of 1000, into a new processor each iteration.
func BenchmarkConsumeLogsStormlog(b *testing.B) {
	shape := jobsim.DefaultQualityShape()
	shape.Duration = [2]time.Duration{40 * time.Second, 50 * time.Second}
	c, err := jobsim.GenerateQualityCase("easy", 1, shape, true)
	if err != nil {
		b.Fatal(err)
	}
	var lines []string
	var buf []byte
	for i := range c.Events {
		e := c.Events[i]
		e.JobID = "bench"
		buf = telemetry.AppendJSON(buf[:0], &e)
		lines = append(lines, string(buf))
	}
	const batch = 1000
	var batches []plog.Logs
	for from := 0; from < len(lines); from += batch {
		ld := plog.NewLogs()
		sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
		for i := from; i < min(from+batch, len(lines)); i++ {
			lr := sl.LogRecords().AppendEmpty()
			lr.Body().SetStr(lines[i])
			lr.Attributes().PutStr("log.file.name", "job.jsonl")
			lr.Attributes().PutInt("log.file.record_number", int64(i+1))
		}
		ld.MarkReadOnly()
		batches = append(batches, ld)
	}
	for _, mode := range []AttributionMode{ModeReference, ModeEvidence} {
		b.Run(string(mode), func(b *testing.B) {
			cfg := createDefaultConfig().(*Config)
			cfg.Mode = mode
			cfg.Emit = EmitOnJobEnd
			cfg.EvaluationInterval = time.Hour
			cfg.JobIdleTimeout = time.Hour
			cfg.Window = time.Hour
			cfg.Limits.MaxEventsPerRank = len(lines)
			b.ReportAllocs()
			for b.Loop() {
				p, err := NewFactory().CreateLogs(context.Background(), nopSettings(), cfg, consumertest.NewNop())
				if err != nil {
					b.Fatal(err)
				}
				for _, ld := range batches {
					if err := p.ConsumeLogs(context.Background(), ld); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				_ = p.Shutdown(context.Background())
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/record")
		})
	}
}
