package output

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// AppendTraces appends one result span per item (contract §5.1): name
// collective_attribution, kind INTERNAL, from interval_start_ns to
// interval_end_ns, with a link to each contributing marker span (invalid,
// all-zero references are left out). A result with links joins the trace of
// its first marker span (as a second root:
// the result spans a wider interval than the marker, so it is linked, not
// parented); one without gets a fresh trace. Items of one (job, host) share
// a resource (service.name, training.job.id, host.name when known) in order
// of first appearance.
func AppendTraces(dst ptrace.Traces, items []Item, ids IDSource) {
	if len(items) == 0 {
		return
	}
	groups := map[resourceKey]ptrace.SpanSlice{}
	for i := range items {
		it := &items[i]
		key := resourceKey{it.JobID, it.Host}
		spans, ok := groups[key]
		if !ok {
			rs := dst.ResourceSpans().AppendEmpty()
			putResource(rs.Resource().Attributes(), it.JobID, it.Host)
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName(ScopeName)
			spans = ss.Spans()
			groups[key] = spans
		}
		appendResultSpan(spans.AppendEmpty(), it, ids)
	}
}

func appendResultSpan(sp ptrace.Span, it *Item, ids IDSource) {
	r := &it.Result
	trace := pcommon.TraceID{}
	for _, l := range it.Links {
		if !pcommon.TraceID(l.TraceID).IsEmpty() {
			trace = l.TraceID
			break
		}
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
	links.EnsureCapacity(len(it.Links))
	for _, l := range it.Links {
		if pcommon.TraceID(l.TraceID).IsEmpty() || pcommon.SpanID(l.SpanID).IsEmpty() {
			continue // not a span: nothing to link to
		}
		link := links.AppendEmpty()
		link.SetTraceID(l.TraceID)
		link.SetSpanID(l.SpanID)
	}
}
