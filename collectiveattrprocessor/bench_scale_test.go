package collectiveattrprocessor

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/pdatashift"
	"github.com/collectiveattr/collectiveattr/internal/scale"
)

// BenchmarkScaleEvaluationRound measures one evaluation round by ranks
// (docs/sizing.md), in each mode: a job of 1 minute at 10 Hz (600 samples
// per rank) with a world all_reduce and a spike at it on every rank every
// 10 s. The first round, untimed, emits the spikes; the timed rounds
// evaluate the window again and emit nothing new, as the rounds of a
// running job mostly do.
func BenchmarkScaleEvaluationRound(b *testing.B) {
	for _, mode := range []AttributionMode{ModeReference, ModeEvidence} {
		for _, ranks := range scale.Sizes() {
			b.Run("mode="+string(mode)+"/ranks="+strconv.Itoa(ranks), func(b *testing.B) {
				c := evaluationJob(b, mode, int64(ranks), 600)
				evaluationRound(b, c, "big")
				b.ReportAllocs()
				cpu := scale.StartCPU()
				for b.Loop() {
					evaluationRound(b, c, "big")
				}
				cpu.Report(b)
			})
		}
	}
}

// BenchmarkScaleIngestMetrics measures ingestion by ranks: each iteration
// is the next second of a job's memory gauges (5 gauges at 10 Hz per rank)
// through the metrics processor. cpu-ns/point should stay flat.
func BenchmarkScaleIngestMetrics(b *testing.B) {
	for _, ranks := range scale.Sizes() {
		b.Run("ranks="+strconv.Itoa(ranks), func(b *testing.B) {
			p, err := NewFactory().CreateMetrics(context.Background(), nopSettings(), benchConfig(), consumertest.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Start(context.Background(), nil); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = p.Shutdown(context.Background()) }()
			start := benchStart()
			const period = benchBatchSeconds * time.Second
			batches := make([]pmetric.Metrics, benchBatchSeconds)
			points := 0
			for i := range batches {
				batches[i], points = jobMetrics(start+int64(i)*int64(time.Second), int64(ranks))
			}
			// The first batch creates the ranks: a running job's
			// batches find them.
			if err := p.ConsumeMetrics(context.Background(), batches[0]); err != nil {
				b.Fatal(err)
			}
			pdatashift.Metrics(batches[0], period)
			b.ReportAllocs()
			cpu := scale.StartCPU()
			i := 1
			for b.Loop() {
				batch := batches[i%len(batches)]
				if err := p.ConsumeMetrics(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
				cpu.Pause(b)
				benchLimit(b, start, i)
				pdatashift.Metrics(batch, period)
				cpu.Resume(b)
				i++
			}
			cpu.Report(b)
			b.ReportMetric(float64(cpu.Elapsed().Nanoseconds())/float64(b.N*points), "cpu-ns/point")
		})
	}
}

// BenchmarkScaleIngestMarkers measures evidence-mode marker ingestion by
// members: each iteration is one collective's marker spans, one per
// member, through the traces processor, with the communicator's members
// (nccl.comm.ranks) on every marker (M² list entries per collective: run
// to 2 048 members only) or on the first collective's markers only (an
// untimed collective before the loop, which also creates the ranks).
func BenchmarkScaleIngestMarkers(b *testing.B) {
	for _, lists := range []string{"every", "first"} {
		for _, members := range scale.Sizes() {
			if lists == "every" && members > 2048 {
				continue
			}
			b.Run("lists="+lists+"/members="+strconv.Itoa(members), func(b *testing.B) {
				cfg := benchConfig()
				cfg.Mode = ModeEvidence
				p, err := NewFactory().CreateTraces(context.Background(), nopSettings(), cfg, consumertest.NewNop())
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Start(context.Background(), nil); err != nil {
					b.Fatal(err)
				}
				defer func() { _ = p.Shutdown(context.Background()) }()
				start := benchStart()
				// The first collective creates the ranks and declares the
				// members: a running job's collectives find both.
				if err := p.ConsumeTraces(context.Background(), collectiveMarkers(start, int64(members), 0, true)); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				cpu := scale.StartCPU()
				i := 1
				for b.Loop() {
					cpu.Pause(b)
					benchLimit(b, start, i)
					td := collectiveMarkers(start+int64(i)*int64(time.Second), int64(members), int64(i), lists == "every")
					cpu.Resume(b)
					if err := p.ConsumeTraces(context.Background(), td); err != nil {
						b.Fatal(err)
					}
					i++
				}
				cpu.Report(b)
				b.ReportMetric(float64(cpu.Elapsed().Nanoseconds())/float64(b.N*members), "cpu-ns/marker")
			})
		}
	}
}

// collectiveMarkers is all_reduce seq of communicator "world" on members
// ranks at startNs: per rank a resource with one NCCL kernel span of 20 ms
// naming the collective, listing the members when list is set.
func collectiveMarkers(startNs, members, seq int64, list bool) ptrace.Traces {
	td := ptrace.NewTraces()
	td.ResourceSpans().EnsureCapacity(int(members))
	for r := range members {
		rs := td.ResourceSpans().AppendEmpty()
		ra := rs.Resource().Attributes()
		ra.PutStr("training.job.id", "scale-job")
		ra.PutInt("training.rank", r)
		ra.PutInt("training.world_size", members)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetName("ncclDevKernel_AllReduce_Sum_f32_RING_LL")
		sp.SetTraceID(pcommon.TraceID{byte(r), byte(r >> 8), byte(seq), byte(seq >> 8), byte(seq >> 16), 1})
		sp.SetSpanID(pcommon.SpanID{byte(r), byte(r >> 8), byte(seq), byte(seq >> 8), byte(seq >> 16), 2})
		sp.SetStartTimestamp(pcommon.Timestamp(startNs + r*1000))
		sp.SetEndTimestamp(pcommon.Timestamp(startNs + r*1000 + 20_000_000))
		a := sp.Attributes()
		a.PutStr("nccl.comm.id", "world")
		a.PutInt("nccl.seq", seq)
		a.PutStr("nccl.op", "all_reduce")
		a.PutInt("nccl.comm.nranks", members)
		if list {
			ranks := a.PutEmptySlice("nccl.comm.ranks")
			ranks.EnsureCapacity(int(members))
			for m := range members {
				ranks.AppendEmpty().SetInt(m)
			}
		}
	}
	return td
}

// BenchmarkScaleIngestDuringRound measures how long ingestion waits for an
// evaluation round, by ranks: each iteration is one round of
// BenchmarkScaleEvaluationRound's evidence-mode job while another
// goroutine ingests one sample of another job every millisecond. It
// reports the round's wall time (ns/op) and the slowest ingest call during
// the rounds (max-ingest-ns): the round holds the buffers' lock only to
// copy the job's window and to claim its results, so the slowest call
// should stay a small part of a round.
func BenchmarkScaleIngestDuringRound(b *testing.B) {
	for _, ranks := range scale.Sizes() {
		b.Run("ranks="+strconv.Itoa(ranks), func(b *testing.B) {
			c := evaluationJob(b, ModeEvidence, int64(ranks), 600)
			evaluationRound(b, c, "big")
			stop, slowest := ingestProbe(c)
			b.ReportAllocs()
			for b.Loop() {
				evaluationRound(b, c, "big")
			}
			b.StopTimer()
			close(stop)
			b.ReportMetric(float64(<-slowest), "max-ingest-ns")
		})
	}
}

// ingestProbe ingests one sample of job "probe" into c every millisecond
// until stop is closed, then sends the slowest call's duration.
func ingestProbe(c *core) (stop chan struct{}, slowest chan time.Duration) {
	stop, slowest = make(chan struct{}), make(chan time.Duration, 1)
	go func() {
		var worst time.Duration
		ts := time.Now().UnixNano()
		for {
			select {
			case <-stop:
				slowest <- worst
				return
			case <-time.After(time.Millisecond):
			}
			ts += int64(time.Millisecond)
			ld := stormlogLogs([]string{stormlogLine("probe", 0, 1, ts, "sample", 0)})
			start := time.Now()
			c.consumeLogs(context.Background(), ld)
			worst = max(worst, time.Since(start))
		}
	}()
	return stop, slowest
}
