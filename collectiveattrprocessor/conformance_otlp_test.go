package collectiveattrprocessor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// otlpFromEvents is the test's converter from stormlog events to what an
// instrumented job would send: per sample, gauges of device used, allocator
// reserved and (when known) device total on the data point's identity
// attributes; per marker event, a compute span holding one NCCL launch
// event at the marker's time (the span itself is no marker span, so it
// gives exactly that one marker). ok is false when the case has no OTLP
// form: events that are neither samples nor markers (they count for the
// reference's trace start), two samples of one rank at the same nanosecond
// (one gauge series cannot hold two values at one time), or an event at
// time 0 (an unset timestamp in OTLP).
func otlpFromEvents(job string, events []telemetry.Event) (md pmetric.Metrics, td ptrace.Traces, ok bool) {
	md, td = pmetric.NewMetrics(), ptrace.NewTraces()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	gauge := func(name string) pmetric.NumberDataPointSlice {
		m := ms.AppendEmpty()
		m.SetName(name)
		m.SetUnit("By")
		return m.SetEmptyGauge().DataPoints()
	}
	used, reserved, total := gauge("gpu.memory.device.used"), gauge("gpu.memory.allocator.reserved"), gauge("gpu.memory.device.total")
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	identify := func(attrs pcommon.Map, e *telemetry.Event) {
		attrs.PutStr("training.job.id", job)
		attrs.PutInt("training.rank", e.Rank)
		attrs.PutInt("training.world_size", e.WorldSize)
	}
	point := func(dps pmetric.NumberDataPointSlice, e *telemetry.Event, v int64) {
		dp := dps.AppendEmpty()
		dp.SetTimestamp(pcommon.Timestamp(e.TimestampNs))
		dp.SetIntValue(v)
		identify(dp.Attributes(), e)
	}
	type rankTime struct{ rank, ts int64 }
	sampled := map[rankTime]bool{}
	for i := range events {
		e := &events[i]
		sample, marker := attribution.IsSample(e), attribution.IsMarker(e)
		if !sample && !marker || sample && sampled[rankTime{e.Rank, e.TimestampNs}] || e.TimestampNs <= 0 {
			return md, td, false
		}
		sampled[rankTime{e.Rank, e.TimestampNs}] = sample || sampled[rankTime{e.Rank, e.TimestampNs}]
		if sample {
			point(used, e, e.DeviceUsedBytes.Value)
			point(reserved, e, e.AllocatorReservedBytes.Value)
			if e.DeviceTotalBytes.Valid {
				point(total, e, e.DeviceTotalBytes.Value)
			}
		}
		if marker {
			sp := spans.AppendEmpty()
			sp.SetName("train_step")
			sp.SetTraceID(pcommon.TraceID{byte(i >> 8), byte(i), 1})
			sp.SetSpanID(pcommon.SpanID{byte(i >> 8), byte(i), 1})
			sp.SetStartTimestamp(pcommon.Timestamp(e.TimestampNs))
			sp.SetEndTimestamp(pcommon.Timestamp(e.TimestampNs))
			ev := sp.Events().AppendEmpty()
			ev.SetName("ncclDevKernel_AllReduce_Sum_f32_RING_LL")
			ev.SetTimestamp(pcommon.Timestamp(e.TimestampNs))
			identify(sp.Attributes(), e)
		}
	}
	return md, td, true
}

// TestConformanceThroughMetricsAndSpans converts the attribution cases made
// of samples and markers into memory gauges and NCCL spans, feeds them
// through metrics and traces pipelines sharing one core, and compares the
// result spans with the expected results (contract §5.1 attributes). Each
// case runs twice: as one traces and one metrics request, and cut into
// requests of about 200 ms of event time each, metrics and spans of each
// slice in turn, as exporters send a running job. A third run adds the
// rank's own process memory (process.gpu.memory.usage, the samples' device
// used) and puts other processes' 1.5 GiB into the device-used gauge: the
// results are the reference's, from the process's figure.
func TestConformanceThroughMetricsAndSpans(t *testing.T) {
	ran, manySlices := 0, 0
	for _, c := range loadConformanceCases(t) {
		if c.Set != "attribution" || c.ExpectedError != nil {
			continue
		}
		var events []telemetry.Event
		lines := readEventLines(t, c.Dir)
		for _, l := range lines {
			e, err := telemetry.DecodeRecord([]byte(l))
			require.NoError(t, err)
			events = append(events, e)
		}
		job := "otlp-" + c.Name
		md, td, ok := otlpFromEvents(job, events)
		if !ok || len(events) == 0 {
			continue
		}
		ran++
		for _, run := range []string{"one_request", "time_slices", "process_memory"} {
			sliced := run == "time_slices"
			t.Run(filepath.Base(c.Dir)+"/"+run, func(t *testing.T) {
				tel := componenttest.NewTelemetry()
				t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
				cfg := createDefaultConfig().(*Config)
				cfg.Preset, cfg.Overrides, cfg.Emit, cfg.Phases = "", c.Overrides, EmitOnJobEnd, false
				if c.Preset != nil {
					cfg.Preset = *c.Preset
				}
				// The buffer holds the whole run, as in TestConformanceThroughLogs.
				cfg.Window = max(cfg.Window, eventSpan(t, lines)+time.Second)
				var expected []any
				dec := json.NewDecoder(bytes.NewReader(c.Expected))
				dec.UseNumber()
				require.NoError(t, dec.Decode(&expected))
				p := newPipelines(t, cfg, tel)
				mds, tds := []pmetric.Metrics{md}, []ptrace.Traces{td}
				if run == "process_memory" {
					mds[0] = withOtherProcesses(md, 1536<<20)
				}
				if sliced {
					if mds, tds = timeSlices(md, td, 200*time.Millisecond); len(mds) > 1 {
						manySlices++
					}
				}
				for i := range mds {
					require.NoError(t, p.metrics.ConsumeMetrics(context.Background(), mds[i]))
					require.NoError(t, p.traces.ConsumeTraces(context.Background(), tds[i]))
				}
				p.shutdown(t)

				got := map[string]ptrace.Span{}
				for _, td := range p.tsink.AllTraces()[len(tds):] {
					for i := range td.ResourceSpans().Len() {
						rs := td.ResourceSpans().At(i)
						jobAttr, _ := rs.Resource().Attributes().Get("training.job.id")
						assert.Equal(t, job, jobAttr.Str())
						sss := rs.ScopeSpans()
						for j := range sss.Len() {
							for k := range sss.At(j).Spans().Len() {
								sp := sss.At(j).Spans().At(k)
								rank, _ := sp.Attributes().Get("training.rank")
								got[fmt.Sprintf("%d/%d", rank.Int(), sp.StartTimestamp())] = sp
							}
						}
					}
				}
				require.Len(t, got, len(expected))
				for _, w := range expected {
					want := w.(map[string]any)
					key := fmt.Sprintf("%s/%s", want["rank"], want["interval_start_ns"])
					sp, ok := got[key]
					if !assert.True(t, ok, "no result span for %s", key) {
						continue
					}
					assertResultSpan(t, want, sp)
				}
			})
		}
	}
	require.GreaterOrEqual(t, ran, 5, "a handful of cases run through metrics and spans")
	require.GreaterOrEqual(t, manySlices, 5, "a handful of them in more than one slice")
}

// withOtherProcesses is otlpFromEvents' md with a process.gpu.memory.usage
// gauge holding the device-used values, and others more bytes in the
// device-used gauge: other processes' memory on the GPU.
func withOtherProcesses(md pmetric.Metrics, others int64) pmetric.Metrics {
	out := pmetric.NewMetrics()
	md.CopyTo(out)
	ms := out.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := range ms.Len() {
		if ms.At(i).Name() != "gpu.memory.device.used" {
			continue
		}
		process := ms.AppendEmpty()
		ms.At(i).CopyTo(process)
		process.SetName("process.gpu.memory.usage")
		for _, dp := range ms.At(i).Gauge().DataPoints().All() {
			dp.SetIntValue(dp.IntValue() + others)
		}
		break
	}
	return out
}

// timeSlices cuts otlpFromEvents' one-resource, one-scope requests into
// requests of step of event time each (by point time and span start), in
// time order; both lists have one request per slice, empty or not.
func timeSlices(md pmetric.Metrics, td ptrace.Traces, step time.Duration) ([]pmetric.Metrics, []ptrace.Traces) {
	first := int64(math.MaxInt64)
	last := int64(0)
	for _, m := range md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().All() {
		for _, dp := range m.Gauge().DataPoints().All() {
			first, last = min(first, int64(dp.Timestamp())), max(last, int64(dp.Timestamp()))
		}
	}
	for _, sp := range td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().All() {
		first, last = min(first, int64(sp.StartTimestamp())), max(last, int64(sp.StartTimestamp()))
	}
	n := int((last-first)/int64(step)) + 1
	slice := func(ts pcommon.Timestamp) int { return int((int64(ts) - first) / int64(step)) }
	mds, tds := make([]pmetric.Metrics, n), make([]ptrace.Traces, n)
	for i := range n {
		mds[i], tds[i] = pmetric.NewMetrics(), ptrace.NewTraces()
		mds[i].ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
		tds[i].ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	}
	for _, m := range md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().All() {
		into := make([]pmetric.NumberDataPointSlice, n)
		for _, dp := range m.Gauge().DataPoints().All() {
			i := slice(dp.Timestamp())
			if into[i] == (pmetric.NumberDataPointSlice{}) {
				sm := mds[i].ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().AppendEmpty()
				sm.SetName(m.Name())
				sm.SetUnit(m.Unit())
				into[i] = sm.SetEmptyGauge().DataPoints()
			}
			dp.CopyTo(into[i].AppendEmpty())
		}
	}
	for _, sp := range td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().All() {
		sp.CopyTo(tds[slice(sp.StartTimestamp())].ResourceSpans().At(0).ScopeSpans().At(0).Spans().AppendEmpty())
	}
	return mds, tds
}

func assertResultSpan(t *testing.T, want map[string]any, sp ptrace.Span) {
	t.Helper()
	num := func(v any) json.Number { return v.(json.Number) }
	attrs := sp.Attributes()
	assert.Equal(t, string(num(want["interval_end_ns"])), fmt.Sprint(uint64(sp.EndTimestamp())))
	get := func(k string) pcommon.Value {
		v, ok := attrs.Get(k)
		require.True(t, ok, "attribute %s missing", k)
		return v
	}
	assert.Equal(t, want["classification"], get("collective_attribution.classification").Str())
	assertNumberNear(t, "confidence", want["confidence"], get("collective_attribution.confidence").Double())
	assert.Equal(t, want["reason_codes"], get("collective_attribution.reason_codes").Slice().AsRaw())
	ev := want["evidence"].(map[string]any)
	for _, k := range []string{"marker_hits", "synchronized_ranks", "expected_world_size", "peak_gap_bytes"} {
		assert.Equal(t, string(num(ev[k])), fmt.Sprint(get("collective_attribution.evidence."+k).Int()), k)
	}
	for _, k := range []string{"synchrony_ratio", "robust_zscore"} {
		assertNumberNear(t, k, ev[k], get("collective_attribution.evidence."+k).Double())
	}
	if ev["peak_gap_ratio"] == nil {
		_, present := attrs.Get("collective_attribution.evidence.peak_gap_ratio")
		assert.False(t, present, "peak_gap_ratio absent when null")
	} else {
		assertNumberNear(t, "peak_gap_ratio", ev["peak_gap_ratio"], get("collective_attribution.evidence.peak_gap_ratio").Double())
	}
	assert.Positive(t, sp.Links().Len()+boolToInt(num(ev["marker_hits"]) == "0"), "a result with markers links its marker spans")
}

// assertNumberNear checks a double attribute against an expected JSON number
// within 1e-9 (an attribute has no integer/float lexeme to compare).
func assertNumberNear(t *testing.T, name string, want any, got float64) {
	t.Helper()
	w, ok := want.(json.Number)
	if !assert.True(t, ok, "%s: want %T %v, got number %v", name, want, want, got) {
		return
	}
	wf, err := w.Float64()
	require.NoError(t, err, name)
	assert.LessOrEqual(t, math.Abs(wf-got), 1e-9, "%s: got %v, want %v", name, got, w)
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
