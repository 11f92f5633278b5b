package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/evidence"
)

// spanMarkerRecord is a marker span of rank converted for evidence mode:
// one marker from ts to ts+dur of collective (c, seq), and its span id.
// spanT0 is the event time the evidence span tests start at.
const spanT0 = int64(1767225600000000000)

func spanMarkerRecord(rank, ts, dur, seq int64, span byte) *ingest.Record {
	return &ingest.Record{
		Kind: ingest.KindMarker, JobID: "j", Rank: rank, WorldSize: 2, TimestampNs: ts,
		Marker:        ingest.SpanRef{TraceID: [16]byte{span}, SpanID: [8]byte{span}},
		MarkerTimesNs: []int64{ts}, MarkerEndsNs: []int64{ts + dur},
		MarkerIdentities: []evidence.Identity{{Valid: true, CommID: "c", Seq: seq, Op: "all_reduce", NRanks: 2}},
	}
}

// TestEvidenceSpansFollowTheirMarkers: each buffered evidence marker keeps
// its span through evictions at max_events_per_rank, the spans table holds
// no span whose markers left, and a resent span is a duplicate.
func TestEvidenceSpansFollowTheirMarkers(t *testing.T) {
	cfg := evidenceConfig()
	cfg.MaxEventsPerRank = 5
	s := New(cfg)
	now := time.Unix(0, spanT0)
	for i := range int64(12) {
		require.True(t, s.AddRecord(spanMarkerRecord(0, spanT0+i*1000, 100, i, byte(i+1)), now))
	}
	v, ok := s.InspectRank("j", 0)
	require.True(t, ok)
	require.Len(t, v.EvidenceMarkers, 5)
	for k, m := range v.EvidenceMarkers {
		i := int64(7 + k)
		assert.Equal(t, spanT0+i*1000, m.StartNs)
		assert.True(t, m.HasRef)
		assert.Equal(t, byte(i+1), m.Ref.SpanID[0], "marker %d keeps its span", i)
		require.NotNil(t, m.Collective)
		assert.Equal(t, i, m.Collective.Seq)
	}
	assert.Equal(t, 5, v.EvidenceSpans, "no span outlives its markers")

	assert.False(t, s.AddRecord(spanMarkerRecord(0, spanT0+11*1000, 100, 11, 12), now), "a resent span is a duplicate")
}

// TestEvidenceLinks: a result that matched a collective links its own
// rank's marker span of it, and the collective's member spans are looked up
// once, in the members' order: the span of each member that has one, zero
// for a stormlog member's marker, which has none, or a member whose marker
// is not of the collective.
func TestEvidenceLinks(t *testing.T) {
	s := New(evidenceConfig())
	now := time.Unix(0, spanT0)
	require.True(t, s.AddRecord(spanMarkerRecord(0, spanT0, 100, 5, 0xa), now))
	require.True(t, s.AddRecord(spanMarkerRecord(1, spanT0+10, 100, 5, 0xb), now))
	require.True(t, s.AddRecord(evidenceMarkerRecord(2, spanT0+20, "c", 5, 100), now))
	require.True(t, s.AddRecord(spanMarkerRecord(3, spanT0+30, 100, 4, 0xd), now))
	match := &attribution.CollectiveMatch{CommID: "c", Op: "all_reduce", Seq: 5, Members: []attribution.MemberMarker{
		{Rank: 0, StartNs: spanT0, EndNs: spanT0 + 100}, {Rank: 1, StartNs: spanT0 + 10, EndNs: spanT0 + 110},
		{Rank: 2, StartNs: spanT0 + 20, EndNs: spanT0 + 120}, {Rank: 3, StartNs: spanT0 + 30, EndNs: spanT0 + 130},
	}}
	r := &attribution.Result{Rank: 1, Mode: attribution.ModeEvidence, Collective: match, MarkerTimesNs: []int64{spanT0 + 10}}
	job := s.Job("j")
	b := ingest.SpanRef{TraceID: [16]byte{0xb}, SpanID: [8]byte{0xb}}
	assert.Equal(t, []ingest.SpanRef{b}, job.AppendLinks(nil, r), "the result links its own marker span only")
	assert.Equal(t, []ingest.SpanRef{b, b}, job.AppendLinks([]ingest.SpanRef{b}, r),
		"appended after another result's links, even the span they hold")
	assert.Equal(t, []ingest.SpanRef{
		{TraceID: [16]byte{0xa}, SpanID: [8]byte{0xa}}, b, {}, {},
	}, s.MemberSpans(job, match))

	r.Rank, r.MarkerTimesNs = 2, []int64{spanT0 + 20}
	assert.Empty(t, job.AppendLinks(nil, r), "a stormlog marker has no span")

	other := *match
	other.Seq = 6 // another collective at the same times: no marker of it
	r.Rank, r.MarkerTimesNs, r.Collective = 1, []int64{spanT0 + 10}, &other
	assert.Empty(t, job.AppendLinks(nil, r))
	assert.Equal(t, make([]ingest.SpanRef, 4), s.MemberSpans(job, &other))

	r.Collective = nil // no collective: the rank's own marker that matched
	assert.Equal(t, []ingest.SpanRef{b}, job.AppendLinks(nil, r))
}

// TestLinksAreTheWindowsMode: how a result's marker spans are found is the
// window's mode's (it buffered the markers), not the result's Mode field:
// an engine that reads evidence mode's window but names no mode in its
// results (a new mode's, say) still links its rank's marker span.
func TestLinksAreTheWindowsMode(t *testing.T) {
	s := New(evidenceConfig())
	now := time.Unix(0, spanT0)
	require.True(t, s.AddRecord(spanMarkerRecord(1, spanT0+10, 100, 5, 0xb), now))
	r := &attribution.Result{Rank: 1, MarkerTimesNs: []int64{spanT0 + 10}}
	b := ingest.SpanRef{TraceID: [16]byte{0xb}, SpanID: [8]byte{0xb}}
	assert.Equal(t, []ingest.SpanRef{b}, s.Job("j").AppendLinks(nil, r))
}
