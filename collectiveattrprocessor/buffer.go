package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"math"
	"slices"
	"time"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// markerEntry is one marker time of a rank: from a marker span or span event
// (ref set), or from a stormlog record whose text matches a collective token
// (ref zero, session kept for the phase index's session end). The span is
// held in the rank's spanRefs table rather than inline: a span's start, end
// and event markers share one table entry, and the entry stays 16 bytes, so
// a full 5-minute window of markers moves through the cache 2.5× faster
// than with 40-byte entries holding the 24-byte span id.
type markerEntry struct {
	TimestampNs int64
	// ref is markerHasRef | the sequence number (mod 2^31) of the marker's
	// span in spanRefs; 0 when the marker has no span.
	ref     uint32
	session uint32
}

const (
	markerHasRef uint32 = 1 << 31
	markerSeq    uint32 = markerHasRef - 1
)

// sampleEntry is a buffered sample: attribution.Sample with its session as
// an index into the rank's session table. Sample, marker and other entries
// hold no pointers, so the rings, which hold nearly all the buffered data,
// cost the garbage collector nothing to scan and need no write barriers.
type sampleEntry struct {
	TimestampNs int64
	GapBytes    int64
	TotalBytes  int64
	session     uint32
}

// otherEntry is a stormlog record that is neither a sample, a marker nor a
// phase boundary. The reference still counts it for the trace start (S6) and
// the phase index's session end (§3.2), so its time and session are kept.
type otherEntry struct {
	TimestampNs int64
	session     uint32
}

// phaseSpanEntry is a buffered phase span from traces: a phase.Span without
// the fields the converter derives from others (ingest.Record's PhaseSpan):
// its session is the job id, its rank the buffer's, its sequence its start,
// and it is neither a boolean-thread nor a synthetic-end span. 104 bytes
// where a phase.Span and the two ids below take 152, and one pointer fewer
// for the garbage collector, for what can be the most numerous entries of a
// rank.
//
// TraceID and ScopeID (its span id in hex) let a later span find it as its
// parent. ParentID is set while Path lacks the ancestors of that parent,
// which had not arrived when the span did (phaseParents).
type phaseSpanEntry struct {
	ThreadName string
	ScopeID    string
	Path       []string
	ThreadID   int64
	StartNs    int64
	EndNs      int64
	TraceID    [16]byte
	ParentID   [8]byte
}

func phaseSpanEntryOf(rec *ingest.Record) phaseSpanEntry {
	s := &rec.PhaseSpan
	return phaseSpanEntry{
		ThreadName: s.ThreadName, ScopeID: s.ScopeID, Path: s.Path, ThreadID: s.ThreadID, StartNs: s.StartNs, EndNs: s.EndNs,
		TraceID: rec.PhaseTraceID, ParentID: rec.PhaseParentID,
	}
}

// span is the phase.Span of e, buffered for job on rank.
func (e *phaseSpanEntry) span(job string, rank int64) phase.Span {
	return phase.Span{
		SessionID: job, Rank: rank, ThreadID: e.ThreadID, ThreadName: e.ThreadName, ScopeID: e.ScopeID,
		Path: e.Path, StartNs: e.StartNs, EndNs: e.EndNs, Sequence: e.StartNs,
	}
}

// rankBuffer is everything buffered for one (job, rank). Its rings together
// hold at most max_events_per_rank entries; each ring is in arrival order.
type rankBuffer struct {
	samples timedRing[sampleEntry]
	// sessions are the distinct session ids ("": none) of the rank's
	// samples, markers and other entries.
	sessions  []string
	compactAt int
	markers   timedRing[markerEntry]
	// spanRefs are the spans of the buffered markers, in marker order;
	// refFront is the sequence number of its front entry. Marker sequence
	// numbers never decrease along the markers ring, so a span leaves the
	// table once a marker of a later span has left the markers ring.
	spanRefs ring[ingest.SpanRef]
	refFront uint32
	others   ring[otherEntry]
	// boundaries are stormlog phase_enter / phase_exit records, kept whole
	// for the phase index.
	boundaries ring[telemetry.Event]
	// phaseSpans are phase spans from traces. At most phaseWaiting of them
	// wait for a parent (ParentID set); evictions leave it too high, and
	// the next evaluation sets it right.
	phaseSpans   ring[phaseSpanEntry]
	phaseWaiting int

	// frontNs is at most the earliest front time of the rings: while the
	// window's cutoff is not past it, trim has nothing to do.
	frontNs int64

	// worldSize is the largest declared world size (0: none declared).
	worldSize int64
	host      string

	// emittedEndNs is the end of the latest interval emitted for this rank
	// (valid when emitted): a later result starting at or before it is the
	// same interval, grown by new data, and is not emitted again.
	emittedEndNs int64
	emitted      bool
}

// sessionIndex returns the index of session in the rank's session table,
// adding it on first use. Ranks see one session, or a few over restarts.
func (rb *rankBuffer) sessionIndex(session string) uint32 {
	for i := len(rb.sessions) - 1; i >= 0; i-- {
		if rb.sessions[i] == session {
			return uint32(i)
		}
	}
	if len(rb.sessions) >= max(compactSessionsAt, rb.compactAt) {
		rb.compactSessions()
		rb.compactAt = 2 * len(rb.sessions)
	}
	rb.sessions = append(rb.sessions, session)
	return uint32(len(rb.sessions) - 1)
}

// compactSessionsAt is the session table size at which sessions no longer
// referenced by a buffered sample are dropped, so that a rank cycling
// through session ids keeps a table no larger than its buffer.
const compactSessionsAt = 64

func (rb *rankBuffer) compactSessions() {
	remap := make(map[uint32]uint32, len(rb.sessions))
	var kept []string
	use := func(idx *uint32) {
		j, ok := remap[*idx]
		if !ok {
			j = uint32(len(kept))
			kept = append(kept, rb.sessions[*idx])
			remap[*idx] = j
		}
		*idx = j
	}
	for i := range rb.samples.len() {
		use(&rb.samples.at(i).session)
	}
	for i := range rb.markers.len() {
		use(&rb.markers.at(i).session)
	}
	for i := range rb.others.len() {
		use(&rb.others.at(i).session)
	}
	rb.sessions = kept
}

// pushMarker buffers a marker of span ref (zero: none).
func (rb *rankBuffer) pushMarker(ts int64, ref ingest.SpanRef, session uint32, maxCap int) {
	rb.markers.push(markerEntry{TimestampNs: ts, ref: rb.spanRefCode(ref, maxCap), session: session}, ts, maxCap)
}

// spanRefCode returns the ref of a marker of span ref (0 for none), adding
// the span to spanRefs unless it is the latest there: a span's markers
// arrive together, so only the latest span is matched for sharing an entry.
func (rb *rankBuffer) spanRefCode(ref ingest.SpanRef, maxCap int) uint32 {
	if ref == (ingest.SpanRef{}) {
		return 0
	}
	n := rb.spanRefs.len()
	if n == 0 || *rb.spanRefs.at(n - 1) != ref {
		// One more than the markers' bound: the table may still hold the
		// span of the last marker to leave.
		rb.spanRefs.push(ref, maxCap+1)
		n++
	}
	return markerHasRef | (rb.refFront+uint32(n)-1)&markerSeq
}

// popMarker drops the oldest marker and the spans no marker refers to.
func (rb *rankBuffer) popMarker() {
	m := *rb.markers.front()
	rb.markers.popFront()
	if rb.markers.len() == 0 {
		for rb.spanRefs.len() > 0 {
			rb.spanRefs.popFront()
		}
		rb.refFront = 0
		return
	}
	if m.ref == 0 {
		return
	}
	// Spans before m's are no longer referred to; m's own may still be (by
	// its span's later markers).
	for d := (m.ref - rb.refFront) & markerSeq; d > 0; d-- {
		rb.spanRefs.popFront()
		rb.refFront++
	}
}

// markerRef returns the span of marker m (false: none).
func (rb *rankBuffer) markerRef(m *markerEntry) (ingest.SpanRef, bool) {
	if m.ref == 0 {
		return ingest.SpanRef{}, false
	}
	return *rb.spanRefs.at(int((m.ref - rb.refFront) & markerSeq)), true
}

func (rb *rankBuffer) pushSample(s attribution.Sample, maxCap int) {
	rb.samples.push(sampleEntry{TimestampNs: s.TimestampNs, GapBytes: s.GapBytes, TotalBytes: s.TotalBytes, session: rb.sessionIndex(s.SessionID)}, s.TimestampNs, maxCap)
}

func (rb *rankBuffer) len() int {
	return rb.samples.len() + rb.markers.len() + rb.others.len() + rb.boundaries.len() + rb.phaseSpans.len()
}

// ringID names one of a rankBuffer's rings.
type ringID uint8

const (
	ringNone ringID = iota
	ringSamples
	ringMarkers
	ringOthers
	ringBoundaries
	ringPhaseSpans
)

// oldest returns the ring whose front entry has the earliest event time.
func (rb *rankBuffer) oldest() (ringID, int64) {
	id, ts := ringNone, int64(math.MaxInt64)
	if rb.samples.len() > 0 && rb.samples.front().TimestampNs < ts {
		id, ts = ringSamples, rb.samples.front().TimestampNs
	}
	if rb.markers.len() > 0 && rb.markers.front().TimestampNs < ts {
		id, ts = ringMarkers, rb.markers.front().TimestampNs
	}
	if rb.others.len() > 0 && rb.others.front().TimestampNs < ts {
		id, ts = ringOthers, rb.others.front().TimestampNs
	}
	if rb.boundaries.len() > 0 && rb.boundaries.front().TimestampNs < ts {
		id, ts = ringBoundaries, rb.boundaries.front().TimestampNs
	}
	if rb.phaseSpans.len() > 0 && rb.phaseSpans.front().EndNs < ts {
		id, ts = ringPhaseSpans, rb.phaseSpans.front().EndNs
	}
	return id, ts
}

func (rb *rankBuffer) pop(id ringID) {
	switch id {
	case ringSamples:
		rb.samples.popFront()
	case ringMarkers:
		rb.popMarker()
	case ringOthers:
		rb.others.popFront()
	case ringBoundaries:
		rb.boundaries.popFront()
	case ringPhaseSpans:
		rb.phaseSpans.popFront()
	}
}

// evictOldest drops the entry with the earliest front time; it makes room
// for one more entry when the rank is at max_events_per_rank.
func (rb *rankBuffer) evictOldest() {
	id, _ := rb.oldest()
	rb.pop(id)
}

// trim drops front entries older than cutoffNs (phase spans by their end)
// and returns how many it dropped. Rings are in arrival order, so an old
// entry behind a newer front one stays until it reaches the front; the
// evaluation ignores such entries. Each ring is trimmed on its own: dropping
// the globally oldest front entry until every front is at or after the
// cutoff leaves the same rings, one pass per ring is cheaper.
func (rb *rankBuffer) trim(cutoffNs int64) int {
	if rb.frontNs >= cutoffNs {
		return 0
	}
	dropped := 0
	k := rb.samples.older(cutoffNs, func(e *sampleEntry) int64 { return e.TimestampNs })
	rb.samples.dropFront(k)
	dropped += k
	dropped += rb.trimMarkers(cutoffNs)
	k = 0
	for k < rb.others.len() && rb.others.at(k).TimestampNs < cutoffNs {
		k++
	}
	rb.others.dropFront(k)
	dropped += k
	k = 0
	for k < rb.boundaries.len() && rb.boundaries.at(k).TimestampNs < cutoffNs {
		k++
	}
	rb.boundaries.dropFront(k)
	dropped += k
	k = 0
	for k < rb.phaseSpans.len() && rb.phaseSpans.at(k).EndNs < cutoffNs {
		k++
	}
	rb.phaseSpans.dropFront(k)
	dropped += k
	_, rb.frontNs = rb.oldest()
	return dropped
}

// trimMarkers drops the front markers older than cutoffNs and the spans no
// remaining marker refers to.
func (rb *rankBuffer) trimMarkers(cutoffNs int64) int {
	k := rb.markers.older(cutoffNs, func(m *markerEntry) int64 { return m.TimestampNs })
	if k == 0 {
		return 0
	}
	// The last dropped marker with a span.
	var lastRef uint32
	for i := k - 1; i >= 0 && lastRef == 0; i-- {
		lastRef = rb.markers.at(i).ref
	}
	rb.markers.dropFront(k)
	if rb.markers.len() == 0 {
		rb.spanRefs.dropFront(rb.spanRefs.len())
		rb.refFront = 0
		return k
	}
	// Spans before the last dropped span are no longer referred to; that
	// span itself may still be (by its later markers).
	if lastRef != 0 {
		d := int((lastRef - rb.refFront) & markerSeq)
		rb.spanRefs.dropFront(d)
		rb.refFront += uint32(d)
	}
	return k
}

// jobState is the buffered state of one job.
type jobState struct {
	id    string
	ranks map[int64]*rankBuffer
	// byRank holds, indexed by rank, the buffers of the ranks below its
	// length (nil for a rank not tracked): ranks are small and dense (0 to
	// world size - 1), and the hot path looks one up per run of records.
	byRank []*rankBuffer
	// newestNs is the newest event time seen for the job: the window and the
	// settle delay are measured from it.
	newestNs int64
	// lastSeen is the wall-clock time of the job's latest accepted record.
	lastSeen time.Time
	// dirty says the job received data since its last evaluation.
	dirty bool
	// events is the number of buffered entries over all ranks.
	events int
}

// rank returns the buffer of rank r, nil when it has none.
func (j *jobState) rank(r int64) *rankBuffer {
	if uint64(r) < uint64(len(j.byRank)) {
		return j.byRank[r]
	}
	return j.ranks[r]
}

// addRank tracks rb as the buffer of rank r. byRank grows to hold r only
// while it stays dense (r below twice the ranks tracked, plus some), so a
// job of a few scattered large ranks keeps them in the map alone; when it
// grows, it takes over the ranks below r that the map alone held.
func (j *jobState) addRank(r int64, rb *rankBuffer) {
	j.ranks[r] = rb
	if r < 0 || r >= 2*int64(len(j.ranks))+64 {
		return
	}
	if n := int(r) + 1; n > len(j.byRank) {
		old := len(j.byRank)
		j.byRank = slices.Grow(j.byRank, n-old)[:n]
		for i := old; i < n; i++ {
			j.byRank[i] = j.ranks[int64(i)]
		}
	}
	j.byRank[r] = rb
}

// trimSlackDivisor sets how far (window / trimSlackDivisor) a rank's oldest
// entry may fall behind the window before a record pushed to it trims it:
// at most ~3% more entries than the window holds, for trims that drop a
// run of entries at once.
const trimSlackDivisor = 32

// lazyCutoffNs is the window's cutoff minus the trim slack.
func (j *jobState) lazyCutoffNs(window time.Duration) int64 {
	slack := window + window/trimSlackDivisor
	if j.newestNs < math.MinInt64+int64(slack) {
		return math.MinInt64
	}
	return j.newestNs - int64(slack)
}

// cutoffNs is the oldest event time the window keeps.
func (j *jobState) cutoffNs(window time.Duration) int64 { return cutoffAt(j.newestNs, window) }

// cutoffAt is the oldest event time the window keeps when the newest event
// time is newestNs.
func cutoffAt(newestNs int64, window time.Duration) int64 {
	if newestNs < math.MinInt64+int64(window) {
		return math.MinInt64
	}
	return newestNs - int64(window)
}
