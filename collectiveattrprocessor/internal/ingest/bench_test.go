package ingest

import (
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/pdatashift"
)

// The benchmark cluster: 64 ranks on 8 hosts of 8 GPUs, sampled at 10 Hz;
// one batch is one second of data.
const (
	benchRanks       = 64
	benchGPUsPerHost = 8
	benchHz          = 10
	benchBatches     = 8 // distinct seconds, cycled
)

var benchT0 = time.Unix(1767225600, 0)

// benchClock is the wall clock of a benchmark: it follows the batches.
type benchClock struct{ t time.Time }

func (c *benchClock) now() time.Time { return c.t }

func benchConverter() (*Converter, *benchClock) {
	clk := &benchClock{t: benchT0.Add(benchBatches * time.Second)}
	cfg := Config{Identity: DefaultIdentityKeys(), Metrics: DefaultMetricNames(), PhaseSpanNames: []string{"train_step", "forward", "backward", "optimizer"}}
	return NewConverter(cfg, clk.now), clk
}

func putRankResource(m pcommon.Map, rank int) {
	m.PutStr("service.name", "trainer")
	m.PutStr("telemetry.sdk.language", "python")
	m.PutStr("telemetry.sdk.name", "opentelemetry")
	m.PutInt("process.pid", int64(4000+rank))
	m.PutStr("training.job.id", "llama-70b-pretrain-0042")
	m.PutInt("training.rank", int64(rank))
	m.PutInt("training.local_rank", int64(rank%benchGPUsPerHost))
	m.PutInt("training.world_size", benchRanks)
	m.PutStr("host.name", hostName(rank/benchGPUsPerHost))
	m.PutInt("gpu.index", int64(rank%benchGPUsPerHost))
}

func hostName(h int) string { return "gpu-node-" + string(rune('a'+h)) }

// inProcessBatch is one second of an in-process exporter on every rank:
// device used/free/total, allocator reserved/allocated, and one unrelated
// metric, 10 points each.
func inProcessBatch(sec int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	base := benchT0.Add(time.Duration(sec) * time.Second).UnixNano()
	names := []string{"gpu.memory.device.used", "gpu.memory.device.free", "gpu.memory.device.total",
		"gpu.memory.allocator.reserved", "gpu.memory.allocator.allocated", "gpu.utilization"}
	for r := range benchRanks {
		rm := md.ResourceMetrics().AppendEmpty()
		putRankResource(rm.Resource().Attributes(), r)
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName("trainer.memory")
		for i, n := range names {
			m := sm.Metrics().AppendEmpty()
			m.SetName(n)
			m.SetUnit("By")
			dps := m.SetEmptyGauge().DataPoints()
			for k := range benchHz {
				dp := dps.AppendEmpty()
				dp.SetTimestamp(pcommon.Timestamp(base + int64(k)*int64(time.Second/benchHz)))
				dp.SetIntValue(int64(10+i)<<30 + int64(k)<<20)
			}
		}
	}
	return md
}

// dcgmBatch is one second of DCGM exporter data for every GPU (used, free,
// reserved in MiB with gpu/UUID/Hostname labels) next to the allocator's
// reserved bytes from every rank.
func dcgmBatch(sec int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	base := benchT0.Add(time.Duration(sec) * time.Second).UnixNano()
	for h := range benchRanks / benchGPUsPerHost {
		rm := md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr("service.name", "dcgm-exporter")
		rm.Resource().Attributes().PutStr("service.instance.id", hostName(h)+":9400")
		sm := rm.ScopeMetrics().AppendEmpty()
		for i, n := range []string{"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED"} {
			m := sm.Metrics().AppendEmpty()
			m.SetName(n)
			dps := m.SetEmptyGauge().DataPoints()
			for g := range benchGPUsPerHost {
				for k := range benchHz {
					dp := dps.AppendEmpty()
					dp.SetTimestamp(pcommon.Timestamp(base + int64(k)*int64(time.Second/benchHz) + 3e6))
					dp.SetDoubleValue(float64(30000 + 1000*i + k))
					a := dp.Attributes()
					a.PutStr("gpu", string(rune('0'+g)))
					a.PutStr("UUID", "GPU-3a1f0c52-9d5e-4c1b-8f0e-2b7d4c9e1a3"+string(rune('0'+g)))
					a.PutStr("device", "nvidia"+string(rune('0'+g)))
					a.PutStr("modelName", "NVIDIA H100 80GB HBM3")
					a.PutStr("Hostname", hostName(h))
					a.PutStr("pci_bus_id", "00000000:1B:00.0")
				}
			}
		}
	}
	for r := range benchRanks {
		rm := md.ResourceMetrics().AppendEmpty()
		putRankResource(rm.Resource().Attributes(), r)
		m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("gpu.memory.allocator.reserved")
		dps := m.SetEmptyGauge().DataPoints()
		for k := range benchHz {
			dp := dps.AppendEmpty()
			dp.SetTimestamp(pcommon.Timestamp(base + int64(k)*int64(time.Second/benchHz)))
			dp.SetIntValue(20<<30 + int64(k)<<20)
		}
	}
	return md
}

// traceBatch is one second of profiler spans on every rank: 10 steps of
// train_step > forward, backward > 2 x nccl:all_reduce (each with a kernel
// event and a sync event), optimizer, plus 2 dataloader spans; 4 attributes
// per span.
func traceBatch(sec int) ptrace.Traces {
	td := ptrace.NewTraces()
	base := benchT0.Add(time.Duration(sec) * time.Second).UnixNano()
	step := int64(time.Second / benchHz)
	for r := range benchRanks {
		rs := td.ResourceSpans().AppendEmpty()
		putRankResource(rs.Resource().Attributes(), r)
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for k := range benchHz {
			t := base + int64(k)*step
			tid := pcommon.TraceID{byte(r), byte(k), byte(sec), 1}
			var sid byte
			add := func(name string, parent pcommon.SpanID, start, end int64) ptrace.Span {
				sid++
				sp := spans.AppendEmpty()
				sp.SetTraceID(tid)
				sp.SetSpanID(pcommon.SpanID{byte(r), byte(k), sid, 1})
				sp.SetParentSpanID(parent)
				sp.SetName(name)
				sp.SetStartTimestamp(pcommon.Timestamp(start))
				sp.SetEndTimestamp(pcommon.Timestamp(end))
				a := sp.Attributes()
				a.PutInt("thread.id", 11)
				a.PutStr("thread.name", "MainThread")
				a.PutStr("device.type", "cuda")
				a.PutInt("step", int64(k))
				return sp
			}
			root := add("train_step", pcommon.SpanID{}, t, t+step-1)
			add("dataloader.next", root.SpanID(), t, t+2e6)
			add("h2d_copy", root.SpanID(), t+2e6, t+3e6)
			add("forward", root.SpanID(), t+3e6, t+40e6)
			bw := add("backward", root.SpanID(), t+40e6, t+80e6)
			for c := range 2 {
				ar := add("nccl:all_reduce", bw.SpanID(), t+50e6+int64(c)*15e6, t+60e6+int64(c)*15e6)
				ev := ar.Events().AppendEmpty()
				ev.SetName("ncclDevKernel_AllReduce_Sum_bf16_RING_LL")
				ev.SetTimestamp(pcommon.Timestamp(t + 51e6 + int64(c)*15e6))
				ar.Events().AppendEmpty().SetName("cudaStreamSynchronize")
			}
			add("optimizer", root.SpanID(), t+80e6, t+95e6)
		}
	}
	return td
}

func BenchmarkConvertMetrics(b *testing.B) {
	for _, bc := range []struct {
		name  string
		batch func(int) pmetric.Metrics
	}{{"in_process", inProcessBatch}, {"dcgm_and_allocator", dcgmBatch}} {
		b.Run(bc.name, func(b *testing.B) {
			batches := make([]pmetric.Metrics, benchBatches)
			for i := range batches {
				batches[i] = bc.batch(i)
			}
			points := batches[0].DataPointCount()
			c, clk := benchConverter()
			records := 0
			emit := func(run *SampleRun) { records += len(run.Samples) }
			skip := func(Skip) {}
			c.metrics.convertMetrics(batches[0], emit, skip) // learn the device mapping
			records = 0
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				batch := batches[i%benchBatches]
				c.metrics.convertMetrics(batch, emit, skip)
				i++
				b.StopTimer()
				pdatashift.Metrics(batch, benchBatches*time.Second)
				clk.t = clk.t.Add(time.Second)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i*points), "ns/point")
			b.ReportMetric(float64(points), "points/op")
			b.ReportMetric(float64(records)/float64(i), "samples/op")
		})
	}
}

func BenchmarkConvertTraces(b *testing.B) {
	batches := make([]ptrace.Traces, benchBatches)
	for i := range batches {
		batches[i] = traceBatch(i)
	}
	spans := batches[0].SpanCount()
	c, clk := benchConverter()
	records := 0
	emit := func(*Record) { records++ }
	emitMarkers := func(run *MarkerRun) { records += len(run.Spans) }
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
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i*spans), "ns/span")
	b.ReportMetric(float64(spans), "spans/op")
	b.ReportMetric(float64(records)/float64(i), "records/op")
}

// logBatch is one second of stormlog JSONL lines from every rank, shipped
// as string bodies (a filelog receiver without a JSON parser).
func logBatch(sec int) plog.Logs {
	ld := plog.NewLogs()
	base := benchT0.Add(time.Duration(sec) * time.Second).UnixNano()
	for r := range benchRanks {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("host.name", hostName(r/benchGPUsPerHost))
		rl.Resource().Attributes().PutStr("log.file.path", "/var/log/stormlog/rank.jsonl")
		lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
		for k := range benchHz {
			ts := base + int64(k)*int64(time.Second/benchHz)
			lrs.AppendEmpty().Body().SetStr(`{"schema_version":3,"session_id":"sess-90ed263b29af","timestamp_ns":` +
				strconv.FormatInt(ts, 10) + `,"event_type":"sample","collector":"stormlog.cuda_tracker","sampling_interval_ms":100,"pid":4101,"host":"` +
				hostName(r/benchGPUsPerHost) + `","job_id":"job-edb055","rank":` + strconv.Itoa(r) + `,"local_rank":` + strconv.Itoa(r%benchGPUsPerHost) +
				`,"world_size":64,"device_id":` + strconv.Itoa(r%benchGPUsPerHost) + `,"allocator_allocated_bytes":38343475200,"allocator_reserved_bytes":40899706880,"allocator_active_bytes":38343475200,"allocator_inactive_bytes":2556231680,"allocator_change_bytes":0,"device_used_bytes":40939365770,"device_free_bytes":44959980150,"device_total_bytes":85899345920,"context":null,"metadata":{}}`)
		}
	}
	return ld
}

func BenchmarkConvertLogs(b *testing.B) {
	ld := logBatch(0)
	records := ld.LogRecordCount()
	c, _ := benchConverter()
	n := 0
	emit := func(*Record) { n++ }
	skip := func(Skip) {}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.logs.convertLogs(ld, emit, skip)
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i*records), "ns/record")
	b.ReportMetric(float64(records), "records/op")
	if n != i*records {
		b.Fatalf("converted %d of %d records", n, i*records)
	}
}

// BenchmarkVisitMetrics is the floor to compare ConvertMetrics with: a
// processor that reads every point's timestamp, value and attribute count of
// the same batches and does nothing else.
func BenchmarkVisitMetrics(b *testing.B) {
	for _, bc := range []struct {
		name  string
		batch func(int) pmetric.Metrics
	}{{"in_process", inProcessBatch}, {"dcgm_and_allocator", dcgmBatch}} {
		b.Run(bc.name, func(b *testing.B) {
			md := bc.batch(0)
			points := md.DataPointCount()
			var sink int64
			b.ReportAllocs()
			for b.Loop() {
				rms := md.ResourceMetrics()
				for i := 0; i < rms.Len(); i++ {
					sms := rms.At(i).ScopeMetrics()
					for j := 0; j < sms.Len(); j++ {
						ms := sms.At(j).Metrics()
						for k := 0; k < ms.Len(); k++ {
							dps := ms.At(k).Gauge().DataPoints()
							for l := 0; l < dps.Len(); l++ {
								dp := dps.At(l)
								sink += int64(dp.Timestamp()) + dp.IntValue() + int64(dp.Attributes().Len())
							}
						}
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*points), "ns/point")
			_ = sink
		})
	}
}

// BenchmarkVisitTraces gives two floors to compare ConvertTraces with, on
// the same batches: walk reads every span's name length, start time and
// attribute values' lengths, as the processor benchmarks' pass-through does;
// required_reads also does what ConvertTraces cannot skip before it stores
// anything: the collective-token match of names, string values and event
// names, the identity keys and phase.path among the attribute keys, and the
// phase-name lookup (contract §2, §3.2).
func BenchmarkVisitTraces(b *testing.B) {
	batches := make([]ptrace.Traces, benchBatches)
	for i := range batches {
		batches[i] = traceBatch(i)
	}
	spans := batches[0].SpanCount()
	var sink int64
	visit := func(b *testing.B, perSpan func(ptrace.Span)) {
		i := 0
		for b.Loop() {
			rss := batches[i%benchBatches].ResourceSpans()
			i++
			for j := 0; j < rss.Len(); j++ {
				sss := rss.At(j).ScopeSpans()
				for k := 0; k < sss.Len(); k++ {
					ss := sss.At(k).Spans()
					for l := 0; l < ss.Len(); l++ {
						perSpan(ss.At(l))
					}
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i*spans), "ns/span")
	}
	b.Run("walk", func(b *testing.B) {
		visit(b, func(sp ptrace.Span) {
			sink += int64(len(sp.Name())) + int64(sp.StartTimestamp()) + int64(sp.Attributes().Len())
			sp.Attributes().Range(func(_ string, v pcommon.Value) bool {
				sink += int64(len(v.Str()))
				return true
			})
		})
	})
	b.Run("required_reads", func(b *testing.B) {
		c, _ := benchConverter()
		visit(b, func(sp ptrace.Span) {
			marker, markedEvents, _, hasPath := c.traces.scanSpan(sp)
			if hasPath || c.traces.phase.has(sp.Name()) {
				sink++
			}
			if marker || markedEvents {
				evs := sp.Events()
				for i := 0; i < evs.Len(); i++ {
					if c.traces.tokens.matches(evs.At(i).Name()) {
						sink += int64(evs.At(i).Timestamp())
					}
				}
			}
		})
	})
	_ = sink
}
