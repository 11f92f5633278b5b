package collectiveattrprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// evidenceOTLP is what a job whose stormlog events are events sends over
// OTLP, one resource per process of a rank carrying its identity and its
// process (process.pid and process.creation.time, as the PyTorch
// instrumentation sends them: a restarted rank's new process has a
// resource of its own): per sample, gauges of
// device used, allocator reserved and device total; per NCCL accounting
// record, a point of the nccl.comm.memory.total gauge with its
// communicator; per marker, a span named as the marker's event type from
// its time to its time plus nccl.duration_ns, with the marker's other
// nccl.* metadata as span attributes (ints as ints, nccl.comm.ranks as an
// int array). kept are the events it converted, as JSON lines: events that
// are none of these (step events) have no OTLP form and are left out.
// spans are the marker spans by rank and start.
func evidenceOTLP(t *testing.T, job string, events []telemetry.Event) (md pmetric.Metrics, td ptrace.Traces, kept []string, spans map[rankStart]spanID) {
	t.Helper()
	md, td = pmetric.NewMetrics(), ptrace.NewTraces()
	spans = map[rankStart]spanID{}
	type rankOut struct {
		used, reserved, total, acct pmetric.NumberDataPointSlice
		spans                       ptrace.SpanSlice
	}
	type process struct{ rank, pid int64 }
	ranks := map[process]*rankOut{}
	identify := func(attrs pcommon.Map, e *telemetry.Event) {
		attrs.PutStr("training.job.id", job)
		attrs.PutInt("training.rank", e.Rank)
		attrs.PutInt("training.world_size", e.WorldSize)
		attrs.PutInt("process.pid", e.PID)
		// The process's first record stands for its start.
		attrs.PutStr("process.creation.time", time.Unix(0, e.TimestampNs).UTC().Format(time.RFC3339Nano))
	}
	rankOf := func(e *telemetry.Event) *rankOut {
		if r := ranks[process{e.Rank, e.PID}]; r != nil {
			return r
		}
		rm := md.ResourceMetrics().AppendEmpty()
		identify(rm.Resource().Attributes(), e)
		ms := rm.ScopeMetrics().AppendEmpty().Metrics()
		gauge := func(name string) pmetric.NumberDataPointSlice {
			m := ms.AppendEmpty()
			m.SetName(name)
			m.SetUnit("By")
			return m.SetEmptyGauge().DataPoints()
		}
		rs := td.ResourceSpans().AppendEmpty()
		identify(rs.Resource().Attributes(), e)
		r := &rankOut{
			used: gauge("gpu.memory.device.used"), reserved: gauge("gpu.memory.allocator.reserved"),
			total: gauge("gpu.memory.device.total"), acct: gauge("nccl.comm.memory.total"),
			spans: rs.ScopeSpans().AppendEmpty().Spans(),
		}
		ranks[process{e.Rank, e.PID}] = r
		return r
	}
	point := func(dps pmetric.NumberDataPointSlice, ts, v int64) pmetric.NumberDataPoint {
		dp := dps.AppendEmpty()
		dp.SetTimestamp(pcommon.Timestamp(ts))
		dp.SetIntValue(v)
		return dp
	}
	var buf []byte
	for i := range events {
		e := &events[i]
		md := e.Metadata
		_, identified := md[evidence.KeyCommID]
		switch {
		case attribution.IsSample(e):
			r := rankOf(e)
			point(r.used, e.TimestampNs, e.DeviceUsedBytes.Value)
			point(r.reserved, e.TimestampNs, e.AllocatorReservedBytes.Value)
			point(r.total, e.TimestampNs, e.DeviceTotalBytes.Value)
		case e.EventType == evidence.AccountingEventType:
			total, ok := evidence.MetadataInt(md[evidence.KeyMemoryTotal])
			require.True(t, ok)
			dp := point(rankOf(e).acct, e.TimestampNs, total)
			dp.Attributes().PutStr(evidence.KeyCommID, md[evidence.KeyCommID].(string))
			if on, ok := md[evidence.KeyCumemEnabled].(bool); ok {
				dp.Attributes().PutBool(evidence.KeyCumemEnabled, on)
			}
		case identified || attribution.IsMarker(e):
			sp := rankOf(e).spans.AppendEmpty()
			sp.SetName(e.EventType)
			sp.SetTraceID(pcommon.TraceID{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i), 1})
			sp.SetSpanID(pcommon.SpanID{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i), 2})
			sp.SetStartTimestamp(pcommon.Timestamp(e.TimestampNs))
			end := e.TimestampNs
			if d, ok := evidence.MetadataInt(md[evidence.KeyDurationNs]); ok && d > 0 {
				end += d
			}
			sp.SetEndTimestamp(pcommon.Timestamp(end))
			putMarkerAttributes(t, sp.Attributes(), md)
			spans[rankStart{e.Rank, e.TimestampNs}] = spanID{sp.TraceID(), sp.SpanID()}
		default:
			continue
		}
		buf = telemetry.AppendJSON(buf[:0], e)
		kept = append(kept, string(buf))
	}
	return md, td, kept, spans
}

type rankStart struct{ rank, startNs int64 }

type spanID struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

// wantLinks is what the result span of r links to (docs/evidence-mode.md
// §4), but the collective's span: the span of the rank's own marker that
// matched. members are the spans its collective's span links, in the
// members' order (nil without a collective).
func wantLinks(r *attribution.Result, spans map[rankStart]spanID) (own, members []spanID) {
	for _, ts := range r.MarkerTimesNs {
		if id, ok := spans[rankStart{r.Rank, ts}]; ok {
			own = append(own, id)
		}
	}
	if c := r.Collective; c != nil {
		for _, m := range c.Members {
			if id, ok := spans[rankStart{m.Rank, m.StartNs}]; ok {
				members = append(members, id)
			}
		}
	}
	return own, members
}

// emittedSpans are the result spans in tds, by rank and interval start,
// and the collective spans, by id: the links of each.
type emittedSpans struct {
	// results holds each result span's links by (rank, start, kind): a
	// spike ending onto a step gives a transient and a persistent result
	// of one rank at one start.
	results     map[resultKey][]spanID
	collectives map[spanID][]spanID
}

type resultKey struct {
	rankStart
	kind string
}

func resultSpanLinks(tds []ptrace.Traces) emittedSpans {
	out := emittedSpans{results: map[resultKey][]spanID{}, collectives: map[spanID][]spanID{}}
	for _, td := range tds {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					var links []spanID
					for _, l := range sp.Links().All() {
						links = append(links, spanID{l.TraceID(), l.SpanID()})
					}
					switch sp.Name() {
					case "collective_attribution":
						rank, _ := sp.Attributes().Get("training.rank")
						kind, _ := sp.Attributes().Get(output.AttrKind)
						out.results[resultKey{rankStart{rank.Int(), int64(sp.StartTimestamp())}, kind.Str()}] = links
					case "collective_attribution.collective":
						out.collectives[spanID{sp.TraceID(), sp.SpanID()}] = links
					}
				}
			}
		}
	}
	return out
}

// putMarkerAttributes copies a marker's nccl.* metadata but its duration
// into span attributes.
func putMarkerAttributes(t *testing.T, a pcommon.Map, md map[string]any) {
	t.Helper()
	for k, v := range md {
		if !strings.HasPrefix(k, "nccl.") || k == evidence.KeyDurationNs {
			continue
		}
		switch x := v.(type) {
		case string:
			a.PutStr(k, x)
		case json.Number:
			n, err := x.Int64()
			require.NoError(t, err)
			a.PutInt(k, n)
		case []any:
			s := a.PutEmptySlice(k)
			for _, r := range x {
				n, err := r.(json.Number).Int64()
				require.NoError(t, err)
				s.AppendEmpty().SetInt(n)
			}
		default:
			t.Fatalf("metadata %s: %T", k, v)
		}
	}
}

// TestEvidenceOTLPOnJobEndEqualsBatch is TestEvidenceOnJobEndEqualsBatch
// for a job that sends its memory as gauges, its markers as NCCL spans
// with their collective identity, and NCCL's accounting as the
// nccl.comm.memory.total gauge: the processor's result log bodies in
// evidence mode with emit: on_job_end equal the CLI's batch result on the
// same job's stormlog records, for every quality family, with and without
// accounting; but for device_wide_memory in every result, which the
// records' device_used_bytes (of unknown scope) never give.
func TestEvidenceOTLPOnJobEndEqualsBatch(t *testing.T) {
	shape := jobsim.DefaultQualityShape()
	shape.Duration = [2]time.Duration{40 * time.Second, 50 * time.Second}
	for _, fam := range equalityFamilies() {
		for _, stats := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nccl_stats=%v", fam.Name, stats), func(t *testing.T) {
				seed := int64(1)
				if fam.Name == "cumem_off" {
					seed = 3 // the variant whose records say nccl.cumem_enabled=false
				}
				c, err := jobsim.GenerateQualityCase(fam.Name, seed, shape, stats)
				require.NoError(t, err)
				job := "otlp-" + fam.Name
				for i := range c.Events {
					c.Events[i].JobID = job
				}
				md, td, lines, spans := evidenceOTLP(t, job, c.Events)
				want := evidenceBatch(t, lines, "medium")
				requireComparable(t, fam.Name, want)
				if stats && fam.Name == "cumem_off" {
					// cuMem off: the accounting does not follow NCCL's buffers.
					require.True(t, slices.ContainsFunc(want, func(s string) bool { return strings.Contains(s, evidence.ReasonAccountingUntracked) }),
						"with untracked accounting some result says so")
				}
				if stats && !slices.Contains([]string{"no_collective", "sparse_quiet", "cumem_off"}, fam.Name) {
					require.True(t, slices.ContainsFunc(want, func(s string) bool {
						return strings.Contains(s, `"nccl_accounted_bytes":`) && !strings.Contains(s, `"nccl_accounted_bytes":null`)
					}), "with accounting some result reads it")
				}

				p := runEvidenceOTLP(t, lines, md, td)
				got := loggedResultTexts(p.lsink)
				slices.Sort(got)
				// The gauges are device used: device-wide, and the results
				// say so.
				assertSameResults(t, deviceWideResults(t, want), got)

				// Each result span links its own marker span and, when
				// it matched a collective, the collective's span, which
				// links the marker spans of the collective on every member:
				// in Jaeger, result → collective → NCCL spans.
				emitted := resultSpanLinks(p.tsink.AllTraces())
				require.Len(t, emitted.results, len(want))
				linked := 0
				for _, r := range evidenceBatchResults(t, lines, "medium") {
					own, members := wantLinks(&r, spans)
					links := emitted.results[resultKey{rankStart{r.Rank, r.IntervalStartNs}, r.Kind}]
					if r.Collective == nil {
						assert.Equal(t, own, links, "links of rank %d at %d", r.Rank, r.IntervalStartNs)
						continue
					}
					require.Len(t, members, len(r.Collective.Members), "every member's marker came from a span")
					require.Len(t, own, 1, "rank %d at %d: its marker of the collective", r.Rank, r.IntervalStartNs)
					require.Len(t, links, 2, "rank %d at %d: its marker span and the collective's", r.Rank, r.IntervalStartNs)
					assert.Equal(t, own[0], links[0])
					collective, ok := emitted.collectives[links[1]]
					require.True(t, ok, "rank %d at %d links a collective span", r.Rank, r.IntervalStartNs)
					assert.Equal(t, members, collective, "the collective span links every member's marker span")
					linked += len(members)
				}
				if slices.ContainsFunc(want, func(s string) bool { return strings.Contains(s, `"collective":{"comm_id":`) }) {
					assert.Positive(t, linked, "the results that name a collective link its spans")
				}
			})
		}
	}
}

// assertSameResults compares result texts and reports the first few that
// differ rather than both lists whole.
func assertSameResults(t *testing.T, want, got []string) {
	t.Helper()
	if slices.Equal(want, got) {
		return
	}
	missing, extra := slices.Clone(want), []string{}
	for _, g := range got {
		if i := slices.Index(missing, g); i >= 0 {
			missing = slices.Delete(missing, i, i+1)
		} else {
			extra = append(extra, g)
		}
	}
	t.Errorf("%d results, want %d; %d missing, %d unexpected", len(got), len(want), len(missing), len(extra))
	for i := range min(3, len(missing)) {
		t.Errorf("missing: %s", missing[i])
	}
	for i := range min(3, len(extra)) {
		t.Errorf("unexpected: %s", extra[i])
	}
}

// secondOfMetrics is the points of one second of a job.
type secondOfMetrics struct {
	sec  int64
	data pmetric.Metrics
}

// metricsBySecond cuts md into requests of one second of point time each,
// in time order, each resource's metrics keeping their names and order.
func metricsBySecond(md pmetric.Metrics) []secondOfMetrics {
	type key struct {
		sec int64
		res int
	}
	out := map[int64]pmetric.Metrics{}
	scopes := map[key]pmetric.MetricSlice{}
	for ri, rm := range md.ResourceMetrics().All() {
		for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
			dest := map[int64]pmetric.NumberDataPointSlice{}
			for _, dp := range m.Gauge().DataPoints().All() {
				sec := int64(dp.Timestamp()) / int64(time.Second)
				dps, ok := dest[sec]
				if !ok {
					req, ok := out[sec]
					if !ok {
						req = pmetric.NewMetrics()
						out[sec] = req
					}
					ms, ok := scopes[key{sec, ri}]
					if !ok {
						res := req.ResourceMetrics().AppendEmpty()
						rm.Resource().CopyTo(res.Resource())
						ms = res.ScopeMetrics().AppendEmpty().Metrics()
						scopes[key{sec, ri}] = ms
					}
					nm := ms.AppendEmpty()
					nm.SetName(m.Name())
					nm.SetUnit(m.Unit())
					dps = nm.SetEmptyGauge().DataPoints()
					dest[sec] = dps
				}
				dp.CopyTo(dps.AppendEmpty())
			}
		}
	}
	secs := slices.Sorted(maps.Keys(out))
	reqs := make([]secondOfMetrics, len(secs))
	for i, s := range secs {
		reqs[i] = secondOfMetrics{s, out[s]}
	}
	return reqs
}

// runEvidenceOTLP feeds a job's memory and its spans a second at a time,
// as exporters send them (each second's spans after its memory), through
// pipelines of one processor in evidence mode with emit: on_job_end, whose
// window and per-rank bound hold the whole job (lines: its records), and
// shuts them down.
func runEvidenceOTLP(t *testing.T, lines []string, md pmetric.Metrics, td ptrace.Traces) *pipelines {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.Mode = ModeEvidence
	cfg.Emit = EmitOnJobEnd
	cfg.Phases = false
	cfg.Window = eventSpan(t, lines) + time.Minute
	cfg.Limits.MaxEventsPerRank = len(lines)
	require.NoError(t, cfg.Validate())
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	p := newPipelines(t, cfg, tel)
	spans := spansBySecond(td)
	for _, m := range metricsBySecond(md) {
		require.NoError(t, p.metrics.ConsumeMetrics(context.Background(), m.data))
		if sp, ok := spans[m.sec]; ok {
			require.NoError(t, p.traces.ConsumeTraces(context.Background(), sp))
			delete(spans, m.sec)
		}
	}
	for _, sec := range slices.Sorted(maps.Keys(spans)) {
		require.NoError(t, p.traces.ConsumeTraces(context.Background(), spans[sec]))
	}
	p.shutdown(t)
	return p
}

// spansBySecond cuts td into requests of the spans that start in each
// second, by second.
func spansBySecond(td ptrace.Traces) map[int64]ptrace.Traces {
	out := map[int64]ptrace.Traces{}
	type key struct {
		sec int64
		res int
	}
	dest := map[key]ptrace.SpanSlice{}
	for ri, rs := range td.ResourceSpans().All() {
		for _, sp := range rs.ScopeSpans().At(0).Spans().All() {
			sec := int64(sp.StartTimestamp()) / int64(time.Second)
			ss, ok := dest[key{sec, ri}]
			if !ok {
				req, ok := out[sec]
				if !ok {
					req = ptrace.NewTraces()
					out[sec] = req
				}
				res := req.ResourceSpans().AppendEmpty()
				rs.Resource().CopyTo(res.Resource())
				ss = res.ScopeSpans().AppendEmpty().Spans()
				dest[key{sec, ri}] = ss
			}
			sp.CopyTo(ss.AppendEmpty())
		}
	}
	return out
}
