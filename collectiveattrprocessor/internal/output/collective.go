package output

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
)

// CollectiveName is the span name of a matched collective
// (docs/evidence-mode.md §4).
const CollectiveName = "collective_attribution.collective"

// AttrLinkedMembers counts the member spans a collective span links.
const AttrLinkedMembers = "collective_attribution.collective.linked_members"

// CollectiveSpan is a collective that results of one evaluation matched,
// with the marker span of each member: emitted once as a span linking the
// members' spans, which each of those results links in turn. So a spike on
// M members costs M result spans of at most two links each and one span of
// M links, not M² links.
type CollectiveSpan struct {
	Match *attribution.CollectiveMatch
	// MemberSpans[i] is the marker span of Match.Members[i]; zero when that
	// member's marker has none.
	MemberSpans []ingest.SpanRef
}

// linked reports whether the collective has a member span to link.
func (c *CollectiveSpan) linked() bool {
	for _, ref := range c.MemberSpans {
		if isSpan(ref) {
			return true
		}
	}
	return false
}

func isSpan(ref ingest.SpanRef) bool {
	return !pcommon.TraceID(ref.TraceID).IsEmpty() && !pcommon.SpanID(ref.SpanID).IsEmpty()
}

// appendCollectiveSpan builds c's span in sp: name CollectiveName, kind
// INTERNAL, from the first member's marker start to the last one's end, in
// the trace of the first member span, with the collective's attributes and
// a link, carrying training.rank, to each member span. It returns the
// span's reference.
func appendCollectiveSpan(sp ptrace.Span, c *CollectiveSpan, ids IDSource) ingest.SpanRef {
	m := c.Match
	var trace pcommon.TraceID
	start, end := int64(0), int64(0)
	linked := 0
	for i, ref := range c.MemberSpans {
		if !isSpan(ref) {
			continue
		}
		mm := &m.Members[i]
		if linked == 0 {
			trace = ref.TraceID
			start, end = mm.StartNs, mm.EndNs
		}
		start, end = min(start, mm.StartNs), max(end, mm.EndNs)
		linked++
	}
	sp.SetTraceID(trace)
	sp.SetSpanID(ids.SpanID())
	sp.SetName(CollectiveName)
	sp.SetKind(ptrace.SpanKindInternal)
	sp.SetStartTimestamp(pcommon.Timestamp(start))
	sp.SetEndTimestamp(pcommon.Timestamp(end))
	a := sp.Attributes()
	a.EnsureCapacity(6)
	a.PutStr(AttrCommID, m.CommID)
	a.PutStr(AttrCollectiveOp, m.Op)
	a.PutInt(AttrCollectiveSeq, m.Seq)
	a.PutInt(AttrCommRanks, m.CommRanks)
	a.PutInt(AttrSynchronizedCommRanks, m.SynchronizedCommRanks)
	a.PutInt(AttrLinkedMembers, int64(linked))
	links := sp.Links()
	links.EnsureCapacity(linked)
	for i, ref := range c.MemberSpans {
		if !isSpan(ref) {
			continue
		}
		l := links.AppendEmpty()
		l.SetTraceID(ref.TraceID)
		l.SetSpanID(ref.SpanID)
		l.Attributes().PutInt(AttrRank, m.Members[i].Rank)
	}
	return ingest.SpanRef{TraceID: sp.TraceID(), SpanID: sp.SpanID()}
}
