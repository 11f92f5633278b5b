package collectiveattrprocessor

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// TestPhaseSpansResolveThroughTheProcessor feeds the samples and markers of
// a golden case with collective results as metrics and spans, plus phase
// spans from traces on every rank, all on thread 7 and covering the whole
// case: a "train / step" root (phase.path) with the phase_span_names
// children "forward" and, in the second run, "backward". The results must
// carry the phase that reference §3.3 gives:
//   - one deepest span: unique, from the heuristic, with that span's scope id
//     (its span id), thread and path (the root's path, then its name);
//   - two deepest spans of different paths on one thread: ambiguous, both
//     paths, and a summary naming the most recent span, the one that
//     started last ("backward", whose scope id sorts first, so a sequence
//     lost on the way would pick "forward");
//   - the first again, with the root sent in a later request than its
//     child, as an SDK exports them: the same unique phase.
func TestPhaseSpansResolveThroughTheProcessor(t *testing.T) {
	var events []telemetry.Event
	var caseDir string
	for _, c := range loadConformanceCases(t) {
		if c.Name == "markers-and-synchrony-4r" {
			caseDir = c.Dir
		}
	}
	require.NotEmpty(t, caseDir)
	for _, l := range readEventLines(t, caseDir) {
		e, err := telemetry.DecodeRecord([]byte(l))
		require.NoError(t, err)
		events = append(events, e)
	}
	first, last := events[0].TimestampNs, events[0].TimestampNs
	var ranks []int64
	for _, e := range events {
		first, last = min(first, e.TimestampNs), max(last, e.TimestampNs)
		if !slices.Contains(ranks, e.Rank) {
			ranks = append(ranks, e.Rank)
		}
	}
	start, end := first-int64(time.Second), last+int64(time.Second)

	for _, tc := range []struct {
		name                      string
		withBackward, parentLater bool
	}{
		{name: "unique"},
		{name: "ambiguous", withBackward: true},
		{name: "parent_in_a_later_request", parentLater: true},
	} {
		withBackward := tc.withBackward
		t.Run(tc.name, func(t *testing.T) {
			const job = "phase-job"
			md, td, ok := otlpFromEvents(job, events)
			require.True(t, ok)
			roots := ptrace.NewTraces()
			forwardID := func(rank int64) pcommon.SpanID { return pcommon.SpanID{byte(rank), 0x03} }
			for _, r := range ranks {
				rs := td.ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr("training.job.id", job)
				rs.Resource().Attributes().PutInt("training.rank", r)
				spans := rs.ScopeSpans().AppendEmpty().Spans()
				add := func(name string, id, parent pcommon.SpanID, startNs int64) ptrace.Span {
					sp := spans.AppendEmpty()
					sp.SetName(name)
					sp.SetTraceID(pcommon.TraceID{byte(r), 0x77})
					sp.SetSpanID(id)
					sp.SetParentSpanID(parent)
					sp.SetStartTimestamp(pcommon.Timestamp(startNs))
					sp.SetEndTimestamp(pcommon.Timestamp(end))
					sp.Attributes().PutInt("thread.id", 7)
					sp.Attributes().PutStr("thread.name", "MainThread")
					return sp
				}
				root := pcommon.SpanID{byte(r), 0x01}
				add("forward", forwardID(r), root, start+1)
				if withBackward {
					add("backward", pcommon.SpanID{byte(r), 0x02}, root, start+2)
				}
				if tc.parentLater {
					rs = roots.ResourceSpans().AppendEmpty()
					rs.Resource().Attributes().PutStr("training.job.id", job)
					rs.Resource().Attributes().PutInt("training.rank", r)
					spans = rs.ScopeSpans().AppendEmpty().Spans()
				}
				require.NoError(t, add("step", root, pcommon.SpanID{}, start).Attributes().PutEmptySlice("phase.path").FromRaw([]any{"train", "step"}))
			}

			cfg := createDefaultConfig().(*Config)
			cfg.Emit, cfg.PhaseSpanNames = EmitOnJobEnd, []string{"forward", "backward"}
			cfg.Window = time.Duration(end-start) + time.Minute
			tel := componenttest.NewTelemetry()
			t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
			p := newPipelines(t, cfg, tel)
			require.NoError(t, p.traces.ConsumeTraces(context.Background(), td))
			require.NoError(t, p.metrics.ConsumeMetrics(context.Background(), md))
			require.NoError(t, p.traces.ConsumeTraces(context.Background(), roots))
			p.shutdown(t)

			var results []map[string]any
			for _, ld := range p.lsink.AllLogs() {
				results = append(results, resultLogsOf(t, ld)...)
			}
			require.NotEmpty(t, results, "the case has collective results")
			for _, res := range results {
				pa, ok := res["phase_attribution"].(map[string]any)
				require.True(t, ok, "result %v has a phase", res)
				if !withBackward {
					rank := int64(res["rank"].(float64))
					assert.Equal(t, map[string]any{
						"phase_resolution": "unique",
						"phase_paths":      []any{"train / step / forward"},
						"phase_source":     "heuristic",
						"phase_path":       "train / step / forward",
						"scope_id":         forwardID(rank).String(),
						"thread_id":        float64(7),
						"thread_name":      "MainThread",
					}, pa)
					continue
				}
				assert.Equal(t, map[string]any{
					"phase_resolution": "ambiguous",
					"phase_paths":      []any{"train / step / backward", "train / step / forward"},
					"phase_summary":    map[string]any{"phase_path": "train / step / backward", "source": "heuristic"},
				}, pa)
			}
		})
	}
}

// TestPhasesOffBuffersNoPhases: with phases off, phase spans (named or with
// phase.path) are not buffered, a marker span still is, and a stormlog
// phase boundary is kept as a plain record (it still counts for the trace
// start) rather than whole for a phase index that is never built.
func TestPhasesOffBuffersNoPhases(t *testing.T) {
	for _, phases := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[phases], func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.Phases, cfg.PhaseSpanNames, cfg.EvaluationInterval = phases, []string{"forward"}, time.Hour
			tel := componenttest.NewTelemetry()
			t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
			p := newPipelines(t, cfg, tel)
			defer p.shutdown(t)
			const job = "phases-off"
			endNs := time.Now().Add(-time.Minute).UnixNano()
			td := markerSpanTraces(job, 0, 1, endNs-int64(time.Second), endNs)
			spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
			for i, name := range []string{"forward", "step"} {
				sp := spans.AppendEmpty()
				sp.SetName(name)
				sp.SetTraceID(pcommon.TraceID{1})
				sp.SetSpanID(pcommon.SpanID{byte(2 + i)})
				sp.SetStartTimestamp(pcommon.Timestamp(endNs - int64(time.Second)))
				sp.SetEndTimestamp(pcommon.Timestamp(endNs))
				if name == "step" {
					sp.Attributes().PutStr("phase.path", "train / step")
				}
			}
			require.NoError(t, p.traces.ConsumeTraces(context.Background(), td))
			require.NoError(t, p.logs.ConsumeLogs(context.Background(), stormlogLogs([]string{stormlogLine(job, 0, 1, endNs, "phase_enter", 0)})))
			require.Equal(t, 3, p.tsink.SpanCount(), "every span passes through")

			c := p.core
			c.mu.Lock()
			defer c.mu.Unlock()
			rb, _ := c.store.InspectRank(job, 0)
			assert.Len(t, rb.Markers, 2, "the marker span's start and end")
			if phases {
				assert.Len(t, rb.PhaseSpans, 2)
				assert.Equal(t, 1, rb.Boundaries)
				assert.Zero(t, rb.Others)
				return
			}
			assert.Empty(t, rb.PhaseSpans)
			assert.Zero(t, rb.Boundaries)
			assert.Equal(t, 1, rb.Others, "the boundary, as a plain record")
		})
	}
}
