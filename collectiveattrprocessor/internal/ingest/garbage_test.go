package ingest

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/evidence"
)

// deepValue nests n slices.
func deepValue(v pcommon.Value, n int) {
	for range n {
		v = v.SetEmptySlice().AppendEmpty()
	}
	v.SetStr("nccl")
}

// garbageAttrs fills m with values of every type, including ones no
// identity key accepts.
func garbageAttrs(m pcommon.Map) {
	m.PutEmpty("training.rank")
	m.PutEmptyBytes("training.job.id").FromRaw([]byte{0xff, 0x00})
	m.PutDouble("world_size", math.Inf(1))
	m.PutDouble("rank", math.NaN())
	m.PutStr("host.name", "\x00\xff")
	m.PutEmptyMap("gpu.index").PutStr("x", "y")
	m.PutStr("gpu", "-1")
	m.PutInt("thread.id", math.MinInt64)
	deepValue(m.PutEmpty("deep"), 70)
	m.PutEmptySlice("phase.path").AppendEmpty().SetInt(3)
}

func garbageMetrics() []pmetric.Metrics {
	var out []pmetric.Metrics
	out = append(out, pmetric.NewMetrics())
	md := pmetric.NewMetrics()
	md.ResourceMetrics().AppendEmpty() // empty resource
	rm := md.ResourceMetrics().AppendEmpty()
	garbageAttrs(rm.Resource().Attributes())
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	for _, name := range []string{"gpu.memory.device.used", "gpu.memory.allocator.reserved", "DCGM_FI_DEV_FB_USED"} {
		m := ms.AppendEmpty()
		m.SetName(name)
		ms.AppendEmpty().SetName(name) // no data at all
		g := m.SetEmptyGauge().DataPoints()
		g.AppendEmpty() // no value, no timestamp
		for _, v := range []float64{math.NaN(), math.Inf(-1), math.Copysign(0, -1), 1e300, math.MaxInt64, 0.5} {
			dp := g.AppendEmpty()
			dp.SetTimestamp(pcommon.Timestamp(math.MaxUint64))
			dp.SetDoubleValue(v)
			garbageAttrs(dp.Attributes())
			dp2 := g.AppendEmpty()
			dp2.SetTimestamp(1)
			dp2.SetDoubleValue(v)
			dp2.Attributes().PutInt("rank", 0)
		}
		for _, v := range []int64{math.MinInt64, -1, 0, math.MaxInt64} {
			dp := g.AppendEmpty()
			dp.SetTimestamp(1767225600000000000)
			dp.SetIntValue(v)
			dp.Attributes().PutStr("rank", "0")
		}
		s := ms.AppendEmpty()
		s.SetName(name)
		s.SetEmptySum().DataPoints().AppendEmpty().SetIntValue(1)
		ms.AppendEmpty().SetName(name)
		ms.At(ms.Len() - 1).SetEmptyExponentialHistogram().DataPoints().AppendEmpty()
		ms.AppendEmpty().SetName(name)
		ms.At(ms.Len() - 1).SetEmptySummary().DataPoints().AppendEmpty()
	}
	out = append(out, md)
	return out
}

func garbageTraces() []ptrace.Traces {
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty()
	rs := td.ResourceSpans().AppendEmpty()
	garbageAttrs(rs.Resource().Attributes())
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	spans.AppendEmpty() // all zero
	for _, name := range []string{"nccl", "train", "", "collective_attribution"} {
		sp := spans.AppendEmpty()
		sp.SetName(name)
		sp.SetStartTimestamp(1767225600000000000)
		sp.SetEndTimestamp(math.MaxUint64)
		garbageAttrs(sp.Attributes())
		sp2 := spans.AppendEmpty()
		sp2.SetName(name)
		sp2.SetStartTimestamp(1767225600000000000)
		sp2.SetEndTimestamp(1767225600000000001)
		sp2.Attributes().PutInt("rank", 0)
		sp2.Attributes().PutStr("phase.path", "/ / /")
		sp2.SetParentSpanID(pcommon.SpanID{1})
		sp2.SetSpanID(pcommon.SpanID{1}) // its own parent: a cycle
		ev := sp2.Events().AppendEmpty()
		ev.SetName("ncclKernel")
		ev.SetTimestamp(0)
		garbageAttrs(ev.Attributes())
	}
	return []ptrace.Traces{ptrace.NewTraces(), td}
}

// garbageLogs builds malformed log bodies, one nested past the decoder's
// depth limit.
func garbageLogs() []plog.Logs {
	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty()
	rl := ld.ResourceLogs().AppendEmpty()
	garbageAttrs(rl.Resource().Attributes())
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	lrs.AppendEmpty()
	for _, s := range []string{
		"", "{", "}", "{}", `{"schema_version":2`, `{"schema_version":2}`, `{"schema_version":4,"metadata":[]}`,
		`{"schema_version":3e0}`, `{"schema_version":-2}`, `{"schema_version":2,"schema_version":3}`,
		"{\"schema_version\":2,\"x\":\"\xff\xfe\"}", `{"schema_version":2,"metadata":` + deepJSON(10001) + `}`,
		`{"schema_version":999999999999999999999999}`, `   {"schema_version":   4   `,
	} {
		lrs.AppendEmpty().Body().SetStr(s)
	}
	m := lrs.AppendEmpty().Body().SetEmptyMap()
	m.PutInt("schema_version", 2)
	deepValue(m.PutEmpty("metadata"), 100)
	m2 := lrs.AppendEmpty().Body().SetEmptyMap()
	m2.PutDouble("schema_version", 2.5)
	m3 := lrs.AppendEmpty().Body().SetEmptyMap()
	m3.PutStr("schema_version", "2")
	m4 := lrs.AppendEmpty().Body().SetEmptyMap()
	m4.PutInt("schema_version", 4)
	garbageAttrs(m4)
	lrs.AppendEmpty().Body().SetEmptyBytes().FromRaw([]byte(`{"schema_version":2}`))
	lrs.AppendEmpty().Body().SetEmptySlice().AppendEmpty().SetStr(`{"schema_version":2}`)
	return []plog.Logs{plog.NewLogs(), ld}
}

func deepJSON(n int) string {
	b := make([]byte, 0, 2*n)
	for range n {
		b = append(b, '[')
	}
	for range n {
		b = append(b, ']')
	}
	return string(b)
}

// TestGarbageNeverPanics feeds malformed input of every shape through every
// converter: nothing may panic, nothing may be emitted from it, and the
// input must stay unchanged (the helpers check).
func TestGarbageNeverPanics(t *testing.T) {
	c, clk := newTestConverter(Config{PhaseSpanNames: []string{"train", ""}})
	for _, md := range garbageMetrics() {
		got := convertMetrics(t, c, md)
		for _, r := range got.records {
			// only the all-zero int points of rank 0 can join
			assert.Equal(t, int64(0), r.Event.DeviceUsedBytes.Value)
		}
	}
	for _, td := range garbageTraces() {
		convertTraces(t, c, td)
	}
	for _, ld := range garbageLogs() {
		got := convertLogs(t, c, ld)
		assert.Empty(t, got.records)
		for _, s := range got.skips {
			assert.Equal(t, SkipInvalidValue, s.Reason)
		}
	}
	clk.advance(24 * time.Hour)
	c.Expire()
	assert.Equal(t, Stats{UnjoinedPoints: c.Stats().UnjoinedPoints}, c.Stats(), "everything expired")
}

// FuzzConvert decodes arbitrary bytes as OTLP metrics, traces and logs and
// converts whatever decodes. The seeds are small valid batches: the fuzzer
// minimises slowly on large inputs.
func FuzzConvert(f *testing.F) {
	const t0 = int64(1767225600000000000)
	md := gaugeBatch(map[string]any{"job_id": "j", "rank": int64(1), "host.name": "h", "gpu": "0"},
		used(t0, 10), reserved(t0, 5), gaugePoint{name: "DCGM_FI_DEV_FB_FREE", ts: t0, value: 1})
	b, _ := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
	f.Add(b)
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutInt("rank", 0)
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetName("train")
	sp.SetSpanID(pcommon.SpanID{2})
	sp.SetParentSpanID(pcommon.SpanID{1})
	sp.SetStartTimestamp(pcommon.Timestamp(t0))
	sp.SetEndTimestamp(pcommon.Timestamp(t0 + 1))
	sp.Attributes().PutStr("op", "all_reduce")
	sp.Events().AppendEmpty().SetName("nccl")
	b, _ = (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	f.Add(b)
	// The inputs EngineReads adds: a marker span and an event with a
	// collective identity, and NCCL's accounting gauge.
	sp.Attributes().PutStr("nccl.comm.id", "0xab")
	sp.Attributes().PutInt("nccl.seq", 3)
	sp.Attributes().PutEmptySlice("nccl.comm.ranks").AppendEmpty().SetInt(1)
	ev := sp.Events().AppendEmpty()
	ev.SetName("ncclKernel")
	ev.SetTimestamp(pcommon.Timestamp(t0))
	ev.Attributes().PutStr("nccl.comm.id", "0xcd")
	ev.Attributes().PutDouble("nccl.seq", 4)
	b, _ = (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	f.Add(b)
	acct := gaugeBatch(map[string]any{"job_id": "j", "rank": int64(1)},
		gaugePoint{name: AccountingMetric, ts: t0, value: 1 << 30, attrs: map[string]any{"nccl.comm.id": "0xab"}})
	b, _ = (&pmetric.ProtoMarshaler{}).MarshalMetrics(acct)
	f.Add(b)
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	lrs.AppendEmpty().Body().SetStr(`{"schema_version":2,"timestamp_ns":1,"event_type":"x","collector":"c","sampling_interval_ms":0,"pid":1,"host":"h","device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":1,"allocator_active_bytes":null,"allocator_inactive_bytes":null,"allocator_change_bytes":0,"device_used_bytes":1,"device_free_bytes":null,"device_total_bytes":null,"context":null,"metadata":{}}`)
	m := lrs.AppendEmpty().Body().SetEmptyMap()
	m.PutInt("schema_version", 3)
	m.PutEmptySlice("metadata").AppendEmpty().SetDouble(2.5)
	b, _ = (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	f.Add(b)
	nop := func(*Record) {}
	expand := func(run *SampleRun) {
		for i := range run.Samples {
			_ = run.Record(i)
		}
	}
	expandMarkers := func(run *MarkerRun) {
		for i := range run.Spans {
			_ = run.Record(i)
		}
	}
	nopSkip := func(Skip) {}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, reads := range []EngineReads{{}, {CollectiveMarkers: true, Accounting: true}} {
			c, _ := newTestConverter(Config{PhaseSpanNames: []string{"train"}, Reads: reads})
			if md, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(b); err == nil {
				c.metrics.convertMetricsAccounting(md, expand, nop, nopSkip)
			}
			if td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(b); err == nil {
				c.traces.convertTraces(td, nop, expandMarkers, nopSkip)
			}
			if ld, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(b); err == nil {
				c.logs.convertLogs(ld, nop, nopSkip)
			}
			c.Expire()
		}
	})
}

// TestNoInputReferenceOutlivesACall: after each Convert call, the
// converter's per-call identity state refers to nothing of the input (a
// pcommon value would keep its whole resource reachable until the next
// call).
func TestNoInputReferenceOutlivesACall(t *testing.T) {
	const t0 = int64(1767225600000000000)
	c, _ := newTestConverter(Config{PhaseSpanNames: []string{"train"}, Reads: EngineReads{CollectiveMarkers: true, Accounting: true}})
	held := func(what string) {
		t.Helper()
		require.Equal(t, markerAttrs{}, c.traces.spanAttrs, what)
		for _, id := range c.traces.markerIDs[:cap(c.traces.markerIDs)] {
			require.Equal(t, evidence.Identity{}, id, what)
		}
		require.Equal(t, pcommon.Map{}, c.ids.resAttrs, what)
		require.Equal(t, rawIdentity{}, c.ids.resID, what)
		require.Equal(t, rawIdentity{}, c.ids.itemID, what)
		require.Empty(t, c.ids.attrMemo.attrs, what)
		require.Nil(t, c.ids.res, what)
		require.Equal(t, resourceReading{}, c.ids.resRead, what)
		for _, m := range []*resourceMemo{&c.ids.metricsRes, &c.ids.tracesRes} {
			for i := range m.entries {
				require.Equal(t, pcommon.Map{}, m.entries[i].seen, what)
			}
		}
	}
	dcgm := gaugeBatch(map[string]any{"host.name": "h"},
		gaugePoint{name: "DCGM_FI_DEV_FB_USED", ts: t0, value: 1, attrs: map[string]any{"gpu": "0", "Hostname": "h"}})
	convertMetrics(t, c, gaugeBatch(map[string]any{"training.job.id": "j", "training.rank": int64(0), "host.name": "h", "gpu.index": int64(0)}, used(t0, 10), reserved(t0, 5)))
	held("metrics")
	convertMetrics(t, c, dcgm)
	held("device-level metrics")
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("training.job.id", "j")
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetName("ncclAllReduce")
	sp.SetStartTimestamp(pcommon.Timestamp(t0))
	sp.SetEndTimestamp(pcommon.Timestamp(t0 + 1))
	sp.Attributes().PutInt("training.rank", 1)
	sp.Attributes().PutStr("nccl.comm.id", "0xab")
	sp.Attributes().PutInt("nccl.seq", 3)
	sp.Attributes().PutEmptySlice("nccl.comm.ranks").AppendEmpty().SetInt(1)
	convertTraces(t, c, td)
	held("traces")
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("training.job.id", "j")
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr(`{"schema_version":2,"timestamp_ns":1,"event_type":"x","collector":"c","sampling_interval_ms":0,"pid":1,"host":"h","device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":1,"allocator_active_bytes":null,"allocator_inactive_bytes":null,"allocator_change_bytes":0,"device_used_bytes":1,"device_free_bytes":null,"device_total_bytes":null,"context":null,"metadata":{}}`)
	lr.Attributes().PutStr("training.job.id", "k")
	convertLogs(t, c, ld)
	held("logs")
}
