package collectiveattrprocessor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
)

// forestSpan is one phase span of a random trace forest.
type forestSpan struct {
	trace  pcommon.TraceID
	id     pcommon.SpanID
	parent pcommon.SpanID
	name   string
	path   string // phase.path, "" for none
}

// randomForest is n phase spans of one rank over a few traces, each the
// child of an earlier span of its trace, a root, or the child of a span
// that is never sent. Span ids are unique within a trace and repeat across
// traces, so the phase path (contract §3.2) is the parent's path (same trace)
// and then the span's name, phase.path replacing both.
func randomForest(rng *rand.Rand, names []string, n int) []forestSpan {
	spans := make([]forestSpan, n)
	perTrace := map[byte]int{}
	for i := range spans {
		s := &spans[i]
		t := byte(1 + rng.IntN(3))
		s.trace = pcommon.TraceID{t, 0x7a}
		s.id = pcommon.SpanID{byte(perTrace[t]), 0x5b}
		perTrace[t]++
		s.name = names[rng.IntN(len(names))]
		switch k := rng.IntN(10); {
		case k == 0:
			s.parent = pcommon.SpanID{byte(i), 0xee} // never sent
		case k <= 2 || i == 0:
			// a root
		default:
			var sameTrace []pcommon.SpanID
			for _, o := range spans[:i] {
				if o.trace == s.trace {
					sameTrace = append(sameTrace, o.id)
				}
			}
			if len(sameTrace) > 0 {
				s.parent = sameTrace[rng.IntN(len(sameTrace))]
			}
		}
		if rng.IntN(8) == 0 {
			s.path = names[rng.IntN(len(names))] + " / " + names[rng.IntN(len(names))]
		}
	}
	return spans
}

// forestPaths is each span's path, worked out the plain way, and whether
// it still waits for a parent that never comes.
func forestPaths(spans []forestSpan) (map[string][]string, map[string]bool) {
	byID := map[string]forestSpan{}
	for _, s := range spans {
		byID[s.trace.String()+"/"+s.id.String()] = s
	}
	paths, waits := map[string][]string{}, map[string]bool{}
	var pathOf func(s forestSpan) ([]string, bool)
	pathOf = func(s forestSpan) ([]string, bool) {
		if s.path != "" {
			var p []string
			for _, part := range strings.Split(s.path, "/") {
				p = append(p, strings.TrimSpace(part))
			}
			return p, false
		}
		var prefix []string
		waiting := false
		if !s.parent.IsEmpty() {
			if parent, ok := byID[s.trace.String()+"/"+s.parent.String()]; ok {
				prefix, waiting = pathOf(parent)
			} else {
				waiting = true
			}
		}
		return append(append([]string(nil), prefix...), s.name), waiting
	}
	for _, s := range spans {
		key := s.trace.String() + "/" + s.id.String()
		paths[key], waits[key] = pathOf(s)
	}
	return paths, waits
}

func forestTraces(job string, spans []forestSpan, endNs int64) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("training.job.id", job)
	rs.Resource().Attributes().PutInt("training.rank", 0)
	out := rs.ScopeSpans().AppendEmpty().Spans()
	for _, s := range spans {
		sp := out.AppendEmpty()
		sp.SetTraceID(s.trace)
		sp.SetSpanID(s.id)
		sp.SetParentSpanID(s.parent)
		sp.SetName(s.name)
		sp.SetStartTimestamp(pcommon.Timestamp(endNs - int64(time.Second)))
		sp.SetEndTimestamp(pcommon.Timestamp(endNs))
		if s.path != "" {
			sp.Attributes().PutStr(ingest.PhasePathAttribute, s.path)
		}
	}
	return td
}

// newPhasePipelines is the three pipelines of one component with phase
// spans named names, emitting on job end and evaluating only when a test
// asks; they shut down with the test.
func newPhasePipelines(t *testing.T, names ...string) *pipelines {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.Emit, cfg.PhaseSpanNames, cfg.EvaluationInterval = EmitOnJobEnd, names, time.Hour
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	p := newPipelines(t, cfg, tel)
	t.Cleanup(func() { p.shutdown(t) })
	return p
}

// bufferedPhasePaths evaluates job's input as an evaluation round would,
// and returns the paths of its rank 0 phase spans by trace/span id, and how
// many the rank counts as waiting for a parent.
func bufferedPhasePaths(t *testing.T, c *core, job string) (map[string][]string, int) {
	t.Helper()
	c.evalMu.Lock()
	defer c.evalMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	j := c.store.Job(job)
	require.NotNil(t, j)
	c.engine.read(j.Job)
	rb, _ := c.store.InspectRank(job, 0)
	paths := map[string][]string{}
	for _, e := range rb.PhaseSpans {
		paths[pcommon.TraceID(e.TraceID).String()+"/"+e.ScopeID] = e.Path
	}
	return paths, rb.PhaseWaiting
}

// TestPhasePathsCompleteAcrossRequests sends random trace forests of phase
// spans in random order over several requests, so that children often
// arrive before their parents, with evaluations in between. Once every span
// is buffered, an evaluation must have given each span the path the whole
// forest gives it, and the rank counts as waiting exactly the spans under a
// parent that never comes.
func TestPhasePathsCompleteAcrossRequests(t *testing.T) {
	names := []string{"train", "step", "forward", "backward", "optimizer"}
	p := newPhasePipelines(t, names...)
	rng := rand.New(rand.NewPCG(3, 5))
	endNs := time.Now().Add(-time.Minute).UnixNano()
	parentLater := 0
	for round := range 300 {
		job := fmt.Sprintf("job-%d", round)
		spans := randomForest(rng, names, 1+rng.IntN(60))
		want, waits := forestPaths(spans)
		rng.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
		type spanKey struct {
			trace pcommon.TraceID
			span  pcommon.SpanID
		}
		request := map[spanKey]int{}
		for r, rest := 0, spans; len(rest) > 0; r++ {
			n := 1 + rng.IntN(len(rest))
			for _, s := range rest[:n] {
				request[spanKey{s.trace, s.id}] = r
			}
			require.NoError(t, p.traces.ConsumeTraces(context.Background(), forestTraces(job, rest[:n], endNs)))
			rest = rest[n:]
			if len(rest) > 0 && rng.IntN(2) == 0 {
				bufferedPhasePaths(t, p.core, job)
			}
		}
		got, waiting := bufferedPhasePaths(t, p.core, job)
		require.Equal(t, want, got, "round %d", round)
		wantWaiting := 0
		for _, w := range waits {
			if w {
				wantWaiting++
			}
		}
		for _, s := range spans {
			if r, ok := request[spanKey{s.trace, s.parent}]; ok && s.path == "" && r > request[spanKey{s.trace, s.id}] {
				parentLater++
			}
		}
		require.Equal(t, wantWaiting, waiting, "round %d", round)
	}
	assert.Greater(t, parentLater, 1000, "spans whose parent came in a later request")
}

// TestPhaseParentCyclesEnd: spans that name each other as parents across
// requests, and a span id sent twice, end with bounded paths and nothing
// waiting, without hanging the evaluation.
func TestPhaseParentCyclesEnd(t *testing.T) {
	p := newPhasePipelines(t, "a", "b", "c")
	endNs := time.Now().Add(-time.Minute).UnixNano()
	trace := pcommon.TraceID{9}
	a, b, c := pcommon.SpanID{1}, pcommon.SpanID{2}, pcommon.SpanID{3}
	for _, batch := range [][]forestSpan{
		{{trace: trace, id: a, parent: b, name: "a"}},
		{{trace: trace, id: b, parent: c, name: "b"}},
		{{trace: trace, id: c, parent: a, name: "c"}},
		{{trace: trace, id: c, parent: a, name: "c"}}, // the same span again
	} {
		require.NoError(t, p.traces.ConsumeTraces(context.Background(), forestTraces("cycle", batch, endNs)))
	}
	got, waiting := bufferedPhasePaths(t, p.core, "cycle")
	assert.Zero(t, waiting)
	require.Len(t, got, 3)
	for key, path := range got {
		assert.LessOrEqual(t, len(path), ingest.MaxPhaseDepth+1, key)
		assert.Greater(t, len(path), 1, "%s went round the cycle", key)
	}
	again, _ := bufferedPhasePaths(t, p.core, "cycle")
	assert.Equal(t, got, again, "a finished span is not joined again")
}

// TestPhaseParentSentTwiceIsTheLaterOne: of two spans with one trace and
// span id, a child takes its path from the later, as within one request.
func TestPhaseParentSentTwiceIsTheLaterOne(t *testing.T) {
	p := newPhasePipelines(t, "a", "x")
	endNs := time.Now().Add(-time.Minute).UnixNano()
	trace := pcommon.TraceID{9}
	for _, batch := range []forestSpan{
		{trace: trace, id: pcommon.SpanID{2}, parent: pcommon.SpanID{1}, name: "x"},
		{trace: trace, id: pcommon.SpanID{1}, name: "a"},
		{trace: trace, id: pcommon.SpanID{1}, name: "a", path: "z / y"},
	} {
		require.NoError(t, p.traces.ConsumeTraces(context.Background(), forestTraces("twice", []forestSpan{batch}, endNs)))
	}
	got, waiting := bufferedPhasePaths(t, p.core, "twice")
	assert.Zero(t, waiting)
	assert.Equal(t, []string{"z", "y", "x"}, got[trace.String()+"/"+pcommon.SpanID{2}.String()])
}

// TestPhaseSpansWaitingGauge: the self-telemetry gauge counts the spans
// still waiting for a parent after each evaluation round.
func TestPhaseSpansWaitingGauge(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.PhaseSpanNames, cfg.EvaluationInterval = []string{"step", "forward"}, time.Hour
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	p := newPipelines(t, cfg, tel)
	defer p.shutdown(t)
	endNs := time.Now().Add(-time.Minute).UnixNano()
	trace := pcommon.TraceID{5}
	round := func(waiting int64, spans ...forestSpan) {
		t.Helper()
		require.NoError(t, p.traces.ConsumeTraces(context.Background(), forestTraces("gauge", spans, endNs)))
		require.NoError(t, p.core.evaluate(context.Background(), false))
		metadatatest.AssertEqualProcessorCollectiveattrPhaseSpansWaiting(t, tel, []metricdata.DataPoint[int64]{{Value: waiting}}, metricdatatest.IgnoreTimestamp())
	}
	round(2,
		forestSpan{trace: trace, id: pcommon.SpanID{2}, parent: pcommon.SpanID{1}, name: "forward"},
		forestSpan{trace: trace, id: pcommon.SpanID{3}, parent: pcommon.SpanID{0xee}, name: "forward"},
	)
	round(1, forestSpan{trace: trace, id: pcommon.SpanID{1}, name: "step"}) // the orphan still waits
}
