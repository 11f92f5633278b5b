package window

import (
	"math"
	"slices"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
)

// In evidence mode a marker span (or a span with marker events) is
// buffered as evidence markers, each with the span it came from, so that a
// result span can link the marker spans of the collective it matched on
// every member rank (docs/evidence-mode.md §4). The span is held in the
// rank's spans table rather than in the marker: a span's markers share one
// entry, and a marker of a stormlog record or an Inspector record, which
// has no span, costs nothing for it.

// Bits of evidenceMarker.flags.
const (
	evApproximate uint32 = 1 << 31
	evHasSpan     uint32 = 1 << 30
	// evSpanSeq is the sequence number (mod 2^30) of the marker's span in
	// evidenceRank.spans.
	evSpanSeq uint32 = evHasSpan - 1
)

func (m *evidenceMarker) approximate() bool { return m.flags&evApproximate != 0 }

// spanCode returns the flags of a marker of span ref, adding the span to
// the table unless it is the latest there: a span's markers arrive
// together.
func (e *evidenceRank) spanCode(ref SpanRef, maxCap int) uint32 {
	n := e.spans.len()
	if n == 0 || *e.spans.at(n - 1) != ref {
		// One more than the markers' bound: the table may still hold the
		// span of the last marker to leave.
		e.spans.push(ref, maxCap+1)
		n++
	}
	return evHasSpan | (e.spanFront+uint32(n)-1)&evSpanSeq
}

// spanOf returns the span of a marker (false: none).
func (e *evidenceRank) spanOf(m *evidenceMarker) (SpanRef, bool) {
	if m.flags&evHasSpan == 0 {
		return SpanRef{}, false
	}
	return *e.spans.at(int((m.flags - e.spanFront) & evSpanSeq)), true
}

// releaseSpans drops the spans no buffered marker refers to, after markers
// left the front. Span sequence numbers never decrease along the markers,
// so the spans before the first remaining marker's are unused.
func (e *evidenceRank) releaseSpans() {
	if e.spans.len() == 0 {
		return
	}
	for i := range e.markers.len() {
		if f := e.markers.auxAt(i).flags; f&evHasSpan != 0 {
			d := int((f - e.spanFront) & evSpanSeq)
			e.spans.dropFront(d)
			e.spanFront += uint32(d)
			return
		}
	}
	e.spans.dropFront(e.spans.len())
	e.spanFront = 0
}

// pushSpanEvidence buffers the markers of one marker span (rec.Kind
// KindMarker, read as collectives: ingest.EngineReads.CollectiveMarkers):
// each an interval with its collective interned in the job's table and the
// span; a marker before the window is refused as stale.
func (j *Job) pushSpanEvidence(rb *Rank, rec *Record) int {
	maxCap := j.cfg.MaxEventsPerRank
	cutoff := j.cutoffNs()
	n := 0
	for i, ts := range rec.MarkerTimesNs {
		if ts < cutoff {
			j.counts.Stale++
			continue
		}
		mk := evidenceMarker{endNs: ts, collective: evidence.NoCollective}
		if i < len(rec.MarkerEndsNs) {
			mk.endNs = max(ts, rec.MarkerEndsNs[i])
		}
		if i < len(rec.MarkerIdentities) && rec.MarkerIdentities[i].Valid {
			mk.collective = j.table().InternIdentity(&rec.MarkerIdentities[i])
		}
		// Making room may evict the span's own earlier markers and with
		// them its table entry, so the entry is looked up per marker.
		j.makeRoom(rb)
		ev := rb.evidence()
		mk.flags = ev.spanCode(rec.Marker, maxCap)
		ev.markers.push(ts, mk, maxCap)
		rb.frontNs = min(rb.frontNs, ts)
		n++
	}
	return n
}

// pushAccounting buffers a point of NCCL's accounting gauge (KindAccounting)
// as pushStormlogEvidence buffers a comm_memory_stats record.
func (j *Job) pushAccounting(rb *Rank, rec *Record) int {
	j.makeRoom(rb)
	rb.evidence().series(rec.AccountingCommID).push(rec.TimestampNs, rec.AccountingBytes, j.cfg.MaxEventsPerRank)
	return 1
}

// holdsEvidenceSpan reports whether rb buffers an evidence marker at ts of
// span ref.
func (rb *Rank) holdsEvidenceSpan(ts int64, ref SpanRef) bool {
	e := rb.ev
	if e == nil {
		return false
	}
	return e.markers.holds(ts, func(i int) bool {
		got, ok := e.spanOf(e.markers.auxAt(i))
		return ok && got == ref
	})
}

// holdsAccounting reports whether rb buffers the accounting point of comm
// at ts.
func (rb *Rank) holdsAccounting(comm string, ts, bytes int64) bool {
	e := rb.ev
	if e == nil {
		return false
	}
	for i := range e.accounting {
		if a := &e.accounting[i]; a.commID == comm {
			return a.holds(ts, func(j int) bool { return *a.auxAt(j) == bytes })
		}
	}
	return false
}

// holdsStormlogInterval reports whether rb buffers the marker interval mk
// of a stormlog or Inspector record (no span) at ts.
func (rb *Rank) holdsStormlogInterval(ts int64, mk *evidenceMarker) bool {
	e := rb.ev
	if e == nil {
		return false
	}
	return e.markers.holds(ts, func(i int) bool {
		m := e.markers.auxAt(i)
		return m.flags&evHasSpan == 0 && m.endNs == mk.endNs && m.collective == mk.collective && m.approximate() == mk.approximate()
	})
}

// appendEvidenceLinks appends to dst the spans an evidence-mode result
// links to itself: the spans of its own rank's markers that matched, those
// of its collective when it matched one. A result links at most as many
// spans as it has marker times (one): the other members' spans are linked
// once per collective, by the collective's span (MemberSpans). Markers of
// stormlog and Inspector records have no span and give no link.
func (job *Job) appendEvidenceLinks(dst []SpanRef, r *attribution.Result) []SpanRef {
	match := func(*evidenceMarker) bool { return true }
	if r.Collective != nil {
		match = isMarkerOf(job, r.Collective, math.MinInt64)
	}
	start := len(dst)
	for _, ts := range r.MarkerTimesNs {
		if ref, ok := markerSpan(job, r.Rank, ts, match); ok && !slices.Contains(dst[start:], ref) {
			dst = append(dst, ref)
		}
	}
	return dst
}

// MemberSpans returns, for each member of collective c in c.Members'
// order, the span of its marker of c, zero when the member's marker has
// none (a stormlog or Inspector record) or left the buffers: one search in
// each member's markers, O(M log n) for M members.
func (job *Job) MemberSpans(c *attribution.CollectiveMatch) []SpanRef {
	out := make([]SpanRef, len(c.Members))
	for i := range c.Members {
		mm := &c.Members[i]
		out[i], _ = markerSpan(job, mm.Rank, mm.StartNs, isMarkerOf(job, c, mm.EndNs))
	}
	return out
}

// markerSpan returns the span of rank's first marker at startNs that match
// accepts (false: none has a span).
func markerSpan(job *Job, rank, startNs int64, match func(m *evidenceMarker) bool) (ref SpanRef, found bool) {
	rb := job.Rank(rank)
	if rb == nil || rb.ev == nil || rb.ev.spans.len() == 0 {
		return ref, false
	}
	e := rb.ev
	found = e.markers.holds(startNs, func(i int) bool {
		m := e.markers.auxAt(i)
		var ok bool
		ref, ok = e.spanOf(m)
		return ok && match(m)
	})
	if !found {
		ref = SpanRef{}
	}
	return ref, found
}

// isMarkerOf matches the markers of collective c, ending at endNs unless
// that is math.MinInt64.
func isMarkerOf(job *Job, c *attribution.CollectiveMatch, endNs int64) func(m *evidenceMarker) bool {
	var table []evidence.Collective
	if job.collectives != nil {
		table = job.collectives.List
	}
	return func(m *evidenceMarker) bool {
		if (endNs != math.MinInt64 && m.endNs != endNs) || m.collective == evidence.NoCollective || int(m.collective) >= len(table) {
			return false
		}
		col := &table[m.collective]
		return col.CommID == c.CommID && col.Seq == c.Seq
	}
}

// AppendLinks appends to dst the marker spans a result of rank r.Rank
// links to, as the window's mode buffered its markers: in evidence mode
// those of its own rank's markers that matched (appendEvidenceLinks),
// otherwise the spans of the markers at its marker times. A round's claims
// append to one slice: a result's links cost no allocation of their own.
func (job *Job) AppendLinks(dst []SpanRef, r *attribution.Result) []SpanRef {
	return job.cfg.Mode.appendLinks(job, dst, r)
}

// appendMarkerLinks appends to dst the distinct marker spans whose start,
// end or span event gave one of the times (sorted).
func appendMarkerLinks(dst []SpanRef, rb *Rank, times []int64) []SpanRef {
	if len(times) == 0 {
		return dst
	}
	start := len(dst)
	for i := range rb.markers.len() {
		ref, ok := rb.markers.ref(i)
		if !ok {
			continue
		}
		if _, ok := slices.BinarySearch(times, rb.markers.at(i)); !ok {
			continue
		}
		if !slices.Contains(dst[start:], ref) {
			dst = append(dst, ref)
		}
	}
	return dst
}
