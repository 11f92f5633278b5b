package collectiveattrprocessor

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/pdatashift"
	"github.com/collectiveattr/collectiveattr/e2e/floorcol"
)

// A realistic job for the benchmarks: 64 ranks on 8 hosts of 8 GPUs, every
// rank reporting at 10 Hz. One batch is one second of the whole job.
const (
	benchRanks        = 64
	benchGPUsPerHost  = 8
	benchHz           = 10
	benchBatchSeconds = 4 // distinct batches cycled through
)

// benchStart is the time of the first benchmark batch. Each iteration is
// the next second of the job, and b.Loop runs a sub-benchmark's iterations
// in one call, so a fast processor runs through many hours of data: it must
// start far enough back that no batch reaches the wall clock, past which
// points are skipped as too far in the future and the benchmark would
// measure the skip path instead (benchLimit checks it).
func benchStart() int64 {
	return time.Now().Add(-72*time.Hour).UnixNano() / int64(time.Second) * int64(time.Second)
}

// benchLimit fails the benchmark once batch i would be in the future.
func benchLimit(b *testing.B, start int64, i int) {
	if start+int64(i+1)*int64(time.Second) > time.Now().UnixNano() {
		b.Fatalf("batch %d reaches the wall clock: start the benchmark further back", i)
	}
}

// benchConfig evaluates rarely, so that the consume benchmarks measure the
// hot path and not background evaluations competing for the two cores.
func benchConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.EvaluationInterval = time.Hour
	return cfg
}

// walkingProcessor is the pass-through baseline: what a processorhelper-
// style processor that only forwards the batch costs, plus one visit of
// every data point / span (timestamp, value or name, and an attribute
// read), the least per-item work any processor that looks at items does
// (filter, attributes, transform). A bare forward costs nothing per item,
// which would make any per-item ratio meaningless; reading more than that
// would flatter the processor. Both run on the same batches, in the same
// benchmark; the processor inside processorhelper, as a collector runs it,
// the baseline without it, so that the helper's per-batch accounting counts
// as the processor's cost.
type walkingProcessor struct {
	metrics consumer.Metrics
	traces  consumer.Traces
	sink    int64
}

func (w *walkingProcessor) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		w.sink += int64(rms.At(i).Resource().Attributes().Len())
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				dps := ms.At(k).Gauge().DataPoints()
				for l := range dps.Len() {
					dp := dps.At(l)
					if v, ok := dp.Attributes().Get("training.rank"); ok {
						w.sink += v.Int()
					}
					w.sink += dp.IntValue() + int64(dp.Timestamp())
				}
			}
		}
	}
	return w.metrics.ConsumeMetrics(ctx, md)
}

func (w *walkingProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		w.sink += int64(rss.At(i).Resource().Attributes().Len())
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				sp := spans.At(k)
				w.sink += int64(len(sp.Name())) + int64(sp.StartTimestamp()) + int64(sp.Attributes().Len())
				sp.Attributes().Range(func(_ string, v pcommon.Value) bool {
					w.sink += int64(len(v.Str()))
					return true
				})
			}
		}
	}
	return w.traces.ConsumeTraces(ctx, td)
}

// benchMetrics builds one second of in-process exporter metrics: per rank a
// resource with the torchrun identity, and per collection the device used,
// free and total and the allocator reserved and allocated gauges.
func benchMetrics(startNs int64) (pmetric.Metrics, int) { return jobMetrics(startNs, benchRanks) }

// jobMetrics is benchMetrics of a job of ranks ranks.
func jobMetrics(startNs, ranks int64) (pmetric.Metrics, int) {
	md := pmetric.NewMetrics()
	points := 0
	for r := range ranks {
		rm := md.ResourceMetrics().AppendEmpty()
		ra := rm.Resource().Attributes()
		ra.PutStr("service.name", "trainer")
		ra.PutStr("training.job.id", "bench-job")
		ra.PutInt("training.rank", r)
		ra.PutInt("training.local_rank", r%benchGPUsPerHost)
		ra.PutInt("training.world_size", ranks)
		ra.PutStr("host.name", fmt.Sprintf("node-%d", r/benchGPUsPerHost))
		ra.PutInt("gpu.index", r%benchGPUsPerHost)
		// The process, as the PyTorch instrumentation names it.
		ra.PutInt("process.pid", 4000+r)
		ra.PutStr("process.creation.time", "2026-01-01T00:00:00.000Z")
		ms := rm.ScopeMetrics().AppendEmpty().Metrics()
		names := []string{"gpu.memory.device.used", "gpu.memory.device.free", "gpu.memory.device.total", "gpu.memory.allocator.reserved", "gpu.memory.allocator.allocated"}
		for _, name := range names {
			m := ms.AppendEmpty()
			m.SetName(name)
			m.SetUnit("By")
			dps := m.SetEmptyGauge().DataPoints()
			for c := range int64(benchHz) {
				ts := startNs + c*int64(time.Second)/benchHz
				gap := baselineGap(ts / (int64(time.Second) / benchHz))
				var v int64
				switch name {
				case "gpu.memory.device.used":
					v = baseReserved + gap
				case "gpu.memory.device.free":
					v = deviceTotal - baseReserved - gap
				case "gpu.memory.device.total":
					v = deviceTotal
				default:
					v = baseReserved
				}
				dp := dps.AppendEmpty()
				dp.SetTimestamp(pcommon.Timestamp(ts))
				dp.SetIntValue(v)
				points++
			}
		}
	}
	return md, points
}

// benchTraces builds one second of NCCL and compute spans: per rank and step
// two collective kernel spans (one with a kernel event) and two compute
// spans, with the attributes a CUDA/NCCL tracer sets.
func benchTraces(startNs int64) (ptrace.Traces, int) {
	td := ptrace.NewTraces()
	n := 0
	for r := range int64(benchRanks) {
		rs := td.ResourceSpans().AppendEmpty()
		ra := rs.Resource().Attributes()
		ra.PutStr("service.name", "trainer")
		ra.PutStr("training.job.id", "bench-job")
		ra.PutInt("training.rank", r)
		ra.PutInt("training.world_size", benchRanks)
		ra.PutStr("host.name", fmt.Sprintf("node-%d", r/benchGPUsPerHost))
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for step := range int64(benchHz) {
			t := startNs + step*int64(time.Second)/benchHz
			for i, name := range []string{"forward", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "backward", "ncclDevKernel_AllGather_RING_LL"} {
				sp := spans.AppendEmpty()
				sp.SetName(name)
				sp.SetTraceID(pcommon.TraceID{byte(r), byte(step), byte(i), byte(startNs >> 32), byte(startNs >> 24)})
				sp.SetSpanID(pcommon.SpanID{byte(r), byte(step), byte(i), 1})
				sp.SetStartTimestamp(pcommon.Timestamp(t + int64(i)*int64(time.Millisecond)))
				sp.SetEndTimestamp(pcommon.Timestamp(t + int64(i+1)*int64(time.Millisecond)))
				sp.Attributes().PutStr("cuda.stream", "7")
				sp.Attributes().PutInt("thread.id", 11)
				if i%2 == 1 {
					sp.Attributes().PutStr("nccl.comm", "0x7f3c")
					sp.Attributes().PutInt("nccl.nranks", benchRanks)
					ev := sp.Events().AppendEmpty()
					ev.SetName("kernel_launch")
					ev.SetTimestamp(pcommon.Timestamp(t))
				}
				n++
			}
		}
	}
	return td, n
}

// benchPhaseTraces is benchTraces with the spans of each step in one trace,
// under a "train_step" root span that ends the step (exported last, as an
// SDK exports a parent after its children), and with a thread.name on
// every span. With phase_span_names train_step, forward and backward, 3 of
// the 5 spans of a step are phase spans.
func benchPhaseTraces(startNs int64) (ptrace.Traces, int) {
	td, n := benchTraces(startNs)
	for _, rs := range td.ResourceSpans().All() {
		spans := rs.ScopeSpans().At(0).Spans()
		steps := spans.Len() / 4
		for step := range steps {
			first := spans.At(4 * step)
			trace := first.TraceID()
			root := first.SpanID()
			root[2] = 0xff
			for i := range 4 {
				sp := spans.At(4*step + i)
				sp.SetTraceID(trace)
				sp.SetParentSpanID(root)
				sp.Attributes().PutStr("thread.name", "MainThread")
			}
			sp := spans.AppendEmpty()
			sp.SetName("train_step")
			sp.SetTraceID(trace)
			sp.SetSpanID(root)
			sp.SetStartTimestamp(first.StartTimestamp())
			sp.SetEndTimestamp(first.StartTimestamp() + pcommon.Timestamp(time.Second/benchHz) - 1)
			sp.Attributes().PutInt("thread.id", 11)
			sp.Attributes().PutStr("thread.name", "MainThread")
			n++
		}
	}
	return td, n
}

// consumeBench is one signal's side of the hot-path benchmarks: how to build,
// shift and encode its batches, the pass-through baseline, and the
// processor.
type consumeBench[T any] struct {
	unit      string // per-item metric name: "ns/point", "ns/span"
	batch     func(startNs int64) (T, int)
	shift     func(T, time.Duration)
	marshal   func(T) ([]byte, error)
	unmarshal func([]byte) (T, error)
	baseline  func(w *walkingProcessor, batch T) error
	// convert runs the ingest converter alone, the processor without its
	// core: the split of the processor's cost between the two.
	convert func(conv *ingest.Converter, batch T)
	create  func(b *testing.B, cfg *Config) (consume func(T) error, shutdown func())
	// floor, where set, makes the floor processor (e2e/floorcol): the least processor that
	// buffers every sample of the window, beside the processor.
	floor func(b *testing.B) (consume func(T) error, shutdown func())
	// config is the processor's configuration; nil: benchConfig.
	config func() *Config
}

// run reports ns per item for the pass-through baseline, for the converter
// alone and for the processor on the same batches; compare the
// sub-benchmarks of one run.
//
// With wire false the processors get the batches as pdata and the baseline
// is the walking processor: the processor's own cost per item against the
// least per-item work. With wire true every batch is first decoded from
// OTLP protobuf, as the OTLP receiver does before any processor runs, and
// the baseline forwards it untouched: what the processor adds to a
// pipeline's cost per item; walk is the walking processor on the decoded
// batches, the least a processor that reads every item adds. Decoding allocates, and how often the garbage
// collector runs depends on the live heap, which the processor's buffers
// make far larger than the baseline's: left alone, the baseline would pay
// for many more collections and look slower than the processor. So in this
// mode the collector is off while timed, and runs outside the timer.
func (cb consumeBench[T]) run(b *testing.B, wire bool) {
	start := benchStart()
	const period = benchBatchSeconds * time.Second
	measure := func(name string, warmup int, setup func(b *testing.B) (func(T) error, func())) {
		b.Run(name, func(b *testing.B) {
			// Each sub-benchmark starts from the same fresh batches.
			batches := make([]T, benchBatchSeconds)
			items := 0
			for i := range batches {
				batches[i], items = cb.batch(start + int64(i)*int64(time.Second))
			}
			consume, shutdown := setup(b)
			defer shutdown()
			// Steady state for the processor: the buffers hold a full
			// window (5 min at 10 Hz).
			for i := range warmup {
				_ = consume(batches[i%len(batches)])
				cb.shift(batches[i%len(batches)], period)
			}
			if wire {
				defer debug.SetGCPercent(debug.SetGCPercent(-1))
				runtime.GC()
			}
			b.ReportAllocs()
			i := warmup
			// cpu is the process's CPU time while timed: on a shared
			// machine wall time also counts the waits for a CPU.
			var cpu time.Duration
			t0 := processCPU()
			for b.Loop() {
				batch := batches[i%len(batches)]
				if wire {
					cpu += processCPU() - t0
					b.StopTimer()
					buf, err := cb.marshal(batch)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					t0 = processCPU()
					if batch, err = cb.unmarshal(buf); err != nil {
						b.Fatal(err)
					}
				}
				_ = consume(batch)
				cpu += processCPU() - t0
				b.StopTimer()
				benchLimit(b, start, i)
				cb.shift(batches[i%len(batches)], period)
				if wire && i%16 == 0 {
					runtime.GC()
				}
				b.StartTimer()
				t0 = processCPU()
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*items), cb.unit)
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*items), "cpu-"+cb.unit)
			}
		})
	}
	measure("passthrough", 0, func(*testing.B) (func(T) error, func()) {
		if wire {
			return func(T) error { return nil }, func() {}
		}
		w := &walkingProcessor{metrics: consumertest.NewNop(), traces: consumertest.NewNop()}
		return func(batch T) error { return cb.baseline(w, batch) }, func() {}
	})
	if wire {
		// The floor of any processor that looks at every item: the
		// walking processor on the decoded batches.
		measure("walk", 0, func(*testing.B) (func(T) error, func()) {
			w := &walkingProcessor{metrics: consumertest.NewNop(), traces: consumertest.NewNop()}
			return func(batch T) error { return cb.baseline(w, batch) }, func() {}
		})
	} else {
		measure("converter", 0, func(*testing.B) (func(T) error, func()) {
			cfg := cb.cfg()
			conv := ingest.NewConverter(cfg.ingestConfig(strategyOf(b, cfg)), time.Now)
			return func(batch T) error { cb.convert(conv, batch); return nil }, func() {}
		})
	}
	if cb.floor != nil {
		measure("floor", 310, cb.floor)
	}
	measure("collectiveattr", 310, func(b *testing.B) (func(T) error, func()) { return cb.create(b, cb.cfg()) })
}

func (cb consumeBench[T]) cfg() *Config {
	if cb.config == nil {
		return benchConfig()
	}
	return cb.config()
}

var metricsBench = consumeBench[pmetric.Metrics]{
	unit:      "ns/point",
	batch:     benchMetrics,
	shift:     pdatashift.Metrics,
	marshal:   (&pmetric.ProtoMarshaler{}).MarshalMetrics,
	unmarshal: (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics,
	baseline: func(w *walkingProcessor, md pmetric.Metrics) error {
		return w.ConsumeMetrics(context.Background(), md)
	},
	convert: func(conv *ingest.Converter, md pmetric.Metrics) {
		for range conv.Metrics(md) {
		}
	},
	create: func(b *testing.B, cfg *Config) (func(pmetric.Metrics) error, func()) {
		p, err := NewFactory().CreateMetrics(context.Background(), nopSettings(), cfg, consumertest.NewNop())
		if err != nil {
			b.Fatal(err)
		}
		return func(md pmetric.Metrics) error { return p.ConsumeMetrics(context.Background(), md) },
			func() { _ = p.Shutdown(context.Background()) }
	},
	floor: func(b *testing.B) (func(pmetric.Metrics) error, func()) {
		f := floorcol.NewFactory()
		p, err := f.CreateMetrics(context.Background(), processortest.NewNopSettings(floorcol.Type), f.CreateDefaultConfig(), consumertest.NewNop())
		if err != nil {
			b.Fatal(err)
		}
		return func(md pmetric.Metrics) error { return p.ConsumeMetrics(context.Background(), md) },
			func() { _ = p.Shutdown(context.Background()) }
	},
}

var tracesBench = consumeBench[ptrace.Traces]{
	unit:      "ns/span",
	batch:     benchTraces,
	shift:     pdatashift.Traces,
	marshal:   (&ptrace.ProtoMarshaler{}).MarshalTraces,
	unmarshal: (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces,
	baseline: func(w *walkingProcessor, td ptrace.Traces) error {
		return w.ConsumeTraces(context.Background(), td)
	},
	convert: func(conv *ingest.Converter, td ptrace.Traces) {
		for range conv.Traces(td) {
		}
	},
	create: func(b *testing.B, cfg *Config) (func(ptrace.Traces) error, func()) {
		p, err := NewFactory().CreateTraces(context.Background(), nopSettings(), cfg, consumertest.NewNop())
		if err != nil {
			b.Fatal(err)
		}
		return func(td ptrace.Traces) error { return p.ConsumeTraces(context.Background(), td) },
			func() { _ = p.Shutdown(context.Background()) }
	},
}

// phaseTracesBench is tracesBench on benchPhaseTraces, with phase spans
// configured.
var phaseTracesBench = func() consumeBench[ptrace.Traces] {
	cb := tracesBench
	cb.batch = benchPhaseTraces
	cb.config = func() *Config {
		cfg := benchConfig()
		cfg.PhaseSpanNames = []string{"train_step", "forward", "backward"}
		return cfg
	}
	return cb
}()

// BenchmarkConsumeMetrics reports ns per data point, processor against the
// walking baseline.
func BenchmarkConsumeMetrics(b *testing.B) { metricsBench.run(b, false) }

// BenchmarkConsumeTraces reports ns per span, processor against the walking
// baseline.
func BenchmarkConsumeTraces(b *testing.B) { tracesBench.run(b, false) }

// BenchmarkConsumeTracesPhases reports ns per span, processor against the
// walking baseline, for traces with phase spans (phase_span_names set).
func BenchmarkConsumeTracesPhases(b *testing.B) { phaseTracesBench.run(b, false) }

// BenchmarkPipelineMetrics reports ns per data point of OTLP decode plus the
// processor against OTLP decode plus a bare forward, and plus the walking
// processor (walk: what reading every point once costs after the decode) and
// the floor processor (floor: what buffering every sample of the window costs).
func BenchmarkPipelineMetrics(b *testing.B) { metricsBench.run(b, true) }

// BenchmarkPipelineTraces reports ns per span of OTLP decode plus the
// processor against OTLP decode plus a bare forward.
func BenchmarkPipelineTraces(b *testing.B) { tracesBench.run(b, true) }

// BenchmarkEvaluationTick measures one evaluation round of a job of 1 024
// ranks with 3 000 buffered samples each (5 minutes at 10 Hz) and a marker
// and a synchronised spike every 10 s.
func BenchmarkEvaluationTick(b *testing.B) {
	const ranks, samples = 1024, 3000
	cfg := createDefaultConfig().(*Config)
	p := newCoreLogs(b, cfg)
	defer func() { _ = p.Shutdown(context.Background()) }()
	c := p.core
	step := int64(time.Second) / benchHz
	start := time.Now().Add(-5*time.Minute).UnixNano() / step * step
	c.mu.Lock()
	now := time.Now()
	for r := range int64(ranks) {
		run := ingest.SampleRun{JobID: "big", Rank: r, WorldSize: ranks, LocalRank: r, DeviceID: -1}
		for i := range int64(samples) {
			ts := start + i*step
			gap := baselineGap(i)
			if i%100 == 50 {
				gap = spikeGap
				c.store.AddMarkerRun(&ingest.MarkerRun{JobID: "big", Rank: r, WorldSize: ranks, Spans: []ingest.MarkerSpan{
					{Ref: ingest.SpanRef{SpanID: [8]byte{byte(i), byte(r)}}, TimesNs: []int64{ts}},
				}}, now)
			}
			run.Samples = append(run.Samples, ingest.SamplePoint{
				TimestampNs: ts, AllocatorReserved: baseReserved, AllocatorAllocated: baseReserved,
				DeviceUsed: baseReserved + gap, DeviceTotal: deviceTotal, Has: ingest.HasDeviceTotal,
			})
		}
		c.store.AddSampleRun(&run, now)
	}
	c.publishSizes()
	c.mu.Unlock()
	evaluationRound(b, c, "big") // the first round grows the evaluation scratch
	b.ReportAllocs()
	for b.Loop() {
		evaluationRound(b, c, "big")
	}
}

// evaluationRound runs one evaluation round in which job has new data.
func evaluationRound(b testing.TB, c *core, job string) {
	c.mu.Lock()
	c.store.Touch(job, time.Now())
	c.mu.Unlock()
	if err := c.evaluate(context.Background(), false); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEvaluationTickPhases measures one evaluation round of the
// ConsumeTracesPhases job with its metrics: 64 ranks, 5 minutes of samples,
// markers and phase spans (30 per rank and second, 576 000 in all) fed
// through the traces and metrics processors, which share one core. In
// parents_never_sent the step spans are left out, so that every forward
// and backward span waits for its parent: each round looks for them all
// again (phaseParents), the worst case of that search.
func BenchmarkEvaluationTickPhases(b *testing.B) {
	withoutSteps := func(startNs int64) (ptrace.Traces, int) {
		td, _ := benchPhaseTraces(startNs)
		for _, rs := range td.ResourceSpans().All() {
			rs.ScopeSpans().At(0).Spans().RemoveIf(func(sp ptrace.Span) bool { return sp.Name() == "train_step" })
		}
		return td, td.SpanCount()
	}
	b.Run("parents_in_batch", func(b *testing.B) { benchEvaluationTickPhases(b, benchPhaseTraces) })
	b.Run("parents_never_sent", func(b *testing.B) { benchEvaluationTickPhases(b, withoutSteps) })
}

func benchEvaluationTickPhases(b *testing.B, batch func(startNs int64) (ptrace.Traces, int)) {
	cfg := phaseTracesBench.cfg()
	f := newFactory(defaultClock())
	tp, err := f.processorFactory().CreateTraces(context.Background(), nopSettings(), cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	mp, err := f.processorFactory().CreateMetrics(context.Background(), nopSettings(), cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) }()
	start := benchStart()
	traces := make([]ptrace.Traces, benchBatchSeconds)
	metrics := make([]pmetric.Metrics, benchBatchSeconds)
	for i := range benchBatchSeconds {
		traces[i], _ = batch(start + int64(i)*int64(time.Second))
		metrics[i], _ = benchMetrics(start + int64(i)*int64(time.Second))
	}
	for i := range 310 {
		j := i % benchBatchSeconds
		if err := mp.ConsumeMetrics(context.Background(), metrics[j]); err != nil {
			b.Fatal(err)
		}
		if err := tp.ConsumeTraces(context.Background(), traces[j]); err != nil {
			b.Fatal(err)
		}
		pdatashift.Metrics(metrics[j], benchBatchSeconds*time.Second)
		pdatashift.Traces(traces[j], benchBatchSeconds*time.Second)
	}
	c := f.cores[cfg]
	evaluationRound(b, c, "bench-job") // the first round grows the evaluation scratch
	b.ReportAllocs()
	for b.Loop() {
		evaluationRound(b, c, "bench-job")
	}
}
