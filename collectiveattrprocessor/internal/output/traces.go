package output

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
)

// AppendTraces appends one result span per item (contract §5.1): name
// collective_attribution, kind INTERNAL, from interval_start_ns to
// interval_end_ns, with a link to each contributing marker span of its rank
// (invalid, all-zero references are left out) and, for an evidence-mode
// result that matched a collective, one link to the collective's span
// (docs/evidence-mode.md §4), appended before the first result linking it,
// in its job's resource without a host. A result with links joins the trace
// of its first link (as a second root: the result spans a wider interval
// than the marker, so it is linked, not parented); one without gets a fresh
// trace. Items of one (job, host) share a resource (service.name,
// training.job.id, host.name when known) in order of first appearance.
func AppendTraces(dst ptrace.Traces, items []Item, ids IDSource) {
	if len(items) == 0 {
		return
	}
	groups := map[resourceKey]ptrace.SpanSlice{}
	// A job's items come in runs of one host (a round claims a job's
	// results in rank order): the run's group is found once.
	var (
		lastKey   resourceKey
		lastSpans ptrace.SpanSlice
		haveLast  bool
	)
	spansOf := func(key resourceKey) ptrace.SpanSlice {
		if haveLast && key == lastKey {
			return lastSpans
		}
		spans, ok := groups[key]
		if !ok {
			rs := dst.ResourceSpans().AppendEmpty()
			putResource(rs.Resource().Attributes(), key.job, key.host)
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName(ScopeName)
			spans = ss.Spans()
			groups[key] = spans
		}
		lastKey, lastSpans, haveLast = key, spans, true
		return spans
	}
	var collectives map[*CollectiveSpan]ingest.SpanRef
	for i := range items {
		it := &items[i]
		var collective ingest.SpanRef
		if c := it.Collective; c != nil {
			ref, ok := collectives[c]
			if !ok && c.linked() {
				if collectives == nil {
					collectives = map[*CollectiveSpan]ingest.SpanRef{}
				}
				ref = appendCollectiveSpan(spansOf(resourceKey{it.JobID, ""}).AppendEmpty(), c, ids)
				collectives[c] = ref
			}
			collective = ref
		}
		appendResultSpan(spansOf(resourceKey{it.JobID, it.Host}).AppendEmpty(), it, collective, ids)
	}
}

// appendResultSpan builds it's span in sp, linked to its marker spans and
// to collective unless that is zero.
func appendResultSpan(sp ptrace.Span, it *Item, collective ingest.SpanRef, ids IDSource) {
	r := it.Result
	trace := pcommon.TraceID{}
	for _, l := range it.Links {
		if !pcommon.TraceID(l.TraceID).IsEmpty() {
			trace = l.TraceID
			break
		}
	}
	if trace.IsEmpty() {
		trace = collective.TraceID
	}
	if trace.IsEmpty() {
		trace = ids.TraceID()
	}
	sp.SetTraceID(trace)
	sp.SetSpanID(ids.SpanID())
	sp.SetName(ResultName)
	sp.SetKind(ptrace.SpanKindInternal)
	sp.SetStartTimestamp(pcommon.Timestamp(r.IntervalStartNs))
	sp.SetEndTimestamp(pcommon.Timestamp(r.IntervalEndNs))
	putResultAttributes(sp.Attributes(), it)
	links := sp.Links()
	links.EnsureCapacity(len(it.Links) + 1)
	for _, l := range it.Links {
		if !isSpan(l) {
			continue // not a span: nothing to link to
		}
		link := links.AppendEmpty()
		link.SetTraceID(l.TraceID)
		link.SetSpanID(l.SpanID)
	}
	if isSpan(collective) {
		link := links.AppendEmpty()
		link.SetTraceID(collective.TraceID)
		link.SetSpanID(collective.SpanID)
	}
}
