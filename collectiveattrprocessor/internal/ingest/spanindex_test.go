package ingest

import (
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

type oracleKey struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

// oraclePaths is the phase path (contract §3.2) of every phase span of td,
// in input order, worked out the plain way: a map of the batch's spans by
// (trace, span) id, the later of two equal ids winning; a span's phase.path
// (first occurrence; string "a / b" or string array), else the names of its
// phase ancestors within the batch, an ancestor with phase.path giving its
// whole path and ending the walk, at most MaxPhaseDepth parents up; names
// trimmed, empty ones dropped. A span with no name left gets nil. With each
// path comes the phase span, and the parent where the walk left the batch
// (empty when it ended at a root, a phase.path or the bound).
func oraclePaths(td ptrace.Traces, phaseNames []string) ([][]string, []ptrace.Span, []pcommon.SpanID) {
	isName := map[string]bool{}
	for _, n := range phaseNames {
		isName[n] = true
	}
	byID := map[oracleKey]ptrace.Span{}
	var order []ptrace.Span
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				byID[oracleKey{trace: sp.TraceID(), span: sp.SpanID()}] = sp
				order = append(order, sp)
			}
		}
	}
	pathOf := func(v pcommon.Value) []string {
		var out []string
		switch v.Type() {
		case pcommon.ValueTypeSlice:
			for _, e := range v.Slice().All() {
				if e.Type() == pcommon.ValueTypeStr && e.Str() != "" {
					out = append(out, e.Str())
				}
			}
		case pcommon.ValueTypeStr:
			for _, p := range strings.Split(v.Str(), "/") {
				if p = strings.TrimSpace(p); p != "" {
					out = append(out, p)
				}
			}
		}
		return out
	}
	var (
		paths   [][]string
		phases  []ptrace.Span
		missing []pcommon.SpanID
	)
	for _, sp := range order {
		if v, ok := sp.Attributes().Get(PhasePathAttribute); ok {
			paths, phases, missing = append(paths, pathOf(v)), append(phases, sp), append(missing, pcommon.SpanID{})
			continue
		}
		if !isName[sp.Name()] {
			continue
		}
		names := []string{sp.Name()}
		var prefix []string
		var left pcommon.SpanID
		parent := sp.ParentSpanID()
		for depth := 0; !parent.IsEmpty() && depth < MaxPhaseDepth; depth++ {
			anc, ok := byID[oracleKey{trace: sp.TraceID(), span: parent}]
			if !ok {
				left = parent
				break
			}
			if v, ok := anc.Attributes().Get(PhasePathAttribute); ok {
				prefix = pathOf(v)
				break
			}
			if isName[anc.Name()] {
				names = append([]string{anc.Name()}, names...)
			}
			parent = anc.ParentSpanID()
		}
		path := prefix
		for _, n := range names {
			if n = strings.TrimSpace(n); n != "" {
				path = append(path, n)
			}
		}
		paths, phases, missing = append(paths, path), append(phases, sp), append(missing, left)
	}
	return paths, phases, missing
}

// randomPhaseBatch is a batch of spans of one rank whose ids collide often
// (few distinct span ids, shared across traces), with parents that are
// missing, cyclic or deep, some phase.path attributes, and names padded
// with spaces.
func randomPhaseBatch(rng *rand.Rand, names []string) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("training.job.id", "job-x")
	rs.Resource().Attributes().PutInt("training.rank", 0)
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	n := 1 + rng.IntN(120)
	ids := 1 + rng.IntN(2*n)
	id := func() pcommon.SpanID {
		var s pcommon.SpanID
		s[0], s[7] = byte(rng.IntN(ids)), byte(rng.IntN(2))
		return s
	}
	for range n {
		sp := spans.AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1 + byte(rng.IntN(2))})
		sp.SetSpanID(id())
		if rng.IntN(8) > 0 {
			sp.SetParentSpanID(id())
		}
		name := names[rng.IntN(len(names))]
		if rng.IntN(6) == 0 {
			name = " " + name + " "
		}
		sp.SetName(name)
		sp.SetStartTimestamp(pcommon.Timestamp(testNow.UnixNano() - 2e9))
		sp.SetEndTimestamp(pcommon.Timestamp(testNow.UnixNano() - 1e9))
		switch rng.IntN(10) {
		case 0:
			sp.Attributes().PutStr(PhasePathAttribute, names[rng.IntN(len(names))]+" / "+names[rng.IntN(len(names))])
		case 1:
			s := sp.Attributes().PutEmptySlice(PhasePathAttribute)
			s.AppendEmpty().SetStr(names[rng.IntN(len(names))])
			s.AppendEmpty().SetStr("")
		}
	}
	return td
}

// TestAncestorPathsMatchTheOracle checks the span index, its lazily read
// phase facts and the shared paths against oraclePaths on random batches,
// over one Converter so that the paths cached by earlier batches are reused.
func TestAncestorPathsMatchTheOracle(t *testing.T) {
	phaseNames := []string{"train", "step", "forward", "backward", "optimizer"}
	names := append([]string{"dataloader", "h2d", "", "  "}, phaseNames...)
	c, _ := newTestConverter(Config{PhaseSpanNames: phaseNames})
	rng := rand.New(rand.NewPCG(7, 11))
	deep := 0
	for batch := range 3000 {
		td := randomPhaseBatch(rng, names)
		if batch%100 == 0 {
			// A chain longer than the walk's bound, and a cycle.
			spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
			for i := range MaxPhaseDepth + 10 {
				sp := spans.AppendEmpty()
				sp.SetTraceID(pcommon.TraceID{9})
				sp.SetSpanID(pcommon.SpanID{byte(i), 9, 9})
				sp.SetParentSpanID(pcommon.SpanID{byte(i + 1), 9, 9})
				sp.SetName(phaseNames[i%len(phaseNames)])
				sp.SetStartTimestamp(pcommon.Timestamp(testNow.UnixNano() - 2e9))
				sp.SetEndTimestamp(pcommon.Timestamp(testNow.UnixNano() - 1e9))
			}
			spans.At(spans.Len() - 1).SetParentSpanID(pcommon.SpanID{byte(MaxPhaseDepth), 9, 9})
			deep++
		}
		want, spans, missing := oraclePaths(td, phaseNames)
		var got collected
		c.traces.convertTraces(td, got.emit, got.emitMarkers, got.skip)
		var paths [][]string
		var links []string
		for _, r := range got.records {
			require.Equal(t, KindPhaseSpan, r.Kind)
			paths = append(paths, r.PhaseSpan.Path)
			links = append(links, pcommon.TraceID(r.PhaseTraceID).String()+"/"+r.PhaseSpan.ScopeID+" left at "+pcommon.SpanID(r.PhaseParentID).String())
		}
		var wantKept [][]string
		var wantLinks []string
		for i, p := range want {
			if len(p) > 0 {
				wantKept = append(wantKept, p)
				wantLinks = append(wantLinks, spans[i].TraceID().String()+"/"+spanHex(spans[i].SpanID())+" left at "+missing[i].String())
			}
		}
		require.Equal(t, wantKept, paths, "batch %d", batch)
		require.Equal(t, wantLinks, links, "batch %d", batch)
		require.Len(t, got.skips, len(want)-len(wantKept), "batch %d: one skip per phase span without a name", batch)
		require.Zero(t, c.traces.spanIdx.len())
		for _, n := range append(c.traces.nameScratch[:cap(c.traces.nameScratch)], c.traces.pathScratch[:cap(c.traces.pathScratch)]...) {
			require.Empty(t, n, "the walk's scratch keeps no name of the request")
		}
	}
	assert.Equal(t, 30, deep)
}

// TestSharedPathsAreOneSlicePerPath: equal paths come back as one slice, of
// interned names that pin no request memory.
func TestSharedPathsAreOneSlicePerPath(t *testing.T) {
	c, _ := newTestConverter(Config{})
	a := c.traces.sharedPath([]string{"train", "step"})
	b := c.traces.sharedPath([]string{string([]byte("train")), string([]byte("step"))})
	require.Equal(t, []string{"train", "step"}, a)
	assert.Same(t, &a[0], &b[0], "the second request gets the first slice")
	assert.Equal(t, len(a), cap(a), "an append by a holder copies")
	assert.Nil(t, c.traces.sharedPath(nil))
	other := c.traces.sharedPath([]string{"train", "eval"})
	assert.Equal(t, []string{"train", "eval"}, other)
	assert.Same(t, &a[0], &c.traces.sharedPath([]string{"train", "step"})[0], "a path is not replaced by another that hashes elsewhere")
}

// TestScopeIDsStayWhatTheyWere: the ids cut from one block and from the
// next are the hex of their span ids, after many more were written.
func TestScopeIDsStayWhatTheyWere(t *testing.T) {
	var s scopeIDs
	var ids []string
	for i := range 3*64 + 5 {
		ids = append(ids, s.of(pcommon.SpanID{byte(i), 0xab, 0, 0, 0, 0, 0xcd, byte(i >> 8)}))
	}
	for i, id := range ids {
		require.Equal(t, pcommon.SpanID{byte(i), 0xab, 0, 0, 0, 0, 0xcd, byte(i >> 8)}.String(), id)
	}
	// One allocation a block of 64 ids, not one an id.
	allocs := testing.AllocsPerRun(20, func() {
		for i := range 4 * 64 {
			s.of(pcommon.SpanID{byte(i)})
		}
	})
	assert.LessOrEqual(t, allocs, 5.0)
}

// spanHex is a span id in hex, the empty id included (SpanID.String gives
// "" for it).
func spanHex(id pcommon.SpanID) string { return hex.EncodeToString(id[:]) }
