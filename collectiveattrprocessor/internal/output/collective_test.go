package output

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
)

// TestCollectiveSpanOncePerCollective: the results of one collective on M
// members link its span, emitted once with a link per member span (M links
// in all, not M per result); a collective none of whose members' markers
// has a span gets no span and no link.
func TestCollectiveSpanOncePerCollective(t *testing.T) {
	const members = 5
	match := &attribution.CollectiveMatch{CommID: "world", Op: "all_reduce", Seq: 9, CommRanks: members}
	spans := &CollectiveSpan{Match: match}
	bare := &CollectiveSpan{Match: &attribution.CollectiveMatch{CommID: "tp", Op: "all_gather", Seq: 1,
		Members: []attribution.MemberMarker{{Rank: 7}}}, MemberSpans: []ingest.SpanRef{{}}}
	var items []Item
	for r := range int64(members) {
		match.Members = append(match.Members, attribution.MemberMarker{Rank: r, StartNs: 100 + r, EndNs: 200 + r})
		spans.MemberSpans = append(spans.MemberSpans, ref(byte(0x10+r)))
		items = append(items, Item{JobID: "j", Host: "h", Result: &attribution.Result{Rank: r, Mode: attribution.ModeEvidence, Collective: match},
			Links: []ingest.SpanRef{ref(byte(0x10 + r))}, Collective: spans})
	}
	spans.MemberSpans[3] = ingest.SpanRef{} // a stormlog member: no span
	items = append(items, Item{JobID: "j", Host: "h", Result: &attribution.Result{Rank: 7, Mode: attribution.ModeEvidence, Collective: bare.Match}, Collective: bare})

	td := ptrace.NewTraces()
	AppendTraces(td, items, &seqIDs{})
	var collectives, results []ptrace.Span
	for _, rs := range td.ResourceSpans().All() {
		for _, sp := range rs.ScopeSpans().At(0).Spans().All() {
			if sp.Name() == CollectiveName {
				_, hasHost := rs.Resource().Attributes().Get(AttrHostName)
				assert.False(t, hasHost, "a collective spans hosts")
				collectives = append(collectives, sp)
			} else {
				results = append(results, sp)
			}
		}
	}
	require.Len(t, collectives, 1, "one span per collective, none without member spans")
	c := collectives[0]
	assert.Equal(t, [2]pcommon.Timestamp{100, 204}, [2]pcommon.Timestamp{c.StartTimestamp(), c.EndTimestamp()})
	assert.Equal(t, pcommon.TraceID(ref(0x10).TraceID), c.TraceID())
	linked, _ := c.Attributes().Get(AttrLinkedMembers)
	assert.Equal(t, int64(4), linked.Int())
	require.Equal(t, 4, c.Links().Len())
	for i, want := range []int64{0, 1, 2, 4} {
		l := c.Links().At(i)
		assert.Equal(t, pcommon.SpanID(ref(byte(0x10+want)).SpanID), l.SpanID())
		rank, _ := l.Attributes().Get(AttrRank)
		assert.Equal(t, want, rank.Int())
	}
	require.Len(t, results, members+1)
	for r, sp := range results[:members] {
		require.Equal(t, 2, sp.Links().Len(), "rank %d: its own marker span and the collective's", r)
		assert.Equal(t, pcommon.SpanID(ref(byte(0x10+r)).SpanID), sp.Links().At(0).SpanID())
		assert.Equal(t, c.SpanID(), sp.Links().At(1).SpanID())
		assert.Equal(t, c.TraceID(), sp.Links().At(1).TraceID())
		assert.Equal(t, pcommon.TraceID(ref(byte(0x10+r)).TraceID), sp.TraceID(), "a result joins its first link's trace")
	}
	assert.Zero(t, results[members].Links().Len())
}
