package window

import (
	"math"

	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// otherEntry is a stormlog record that is neither a sample, a marker nor a
// phase boundary. The reference still counts it for the trace start
// (reference-semantics §2.3 S6) and the phase index's session end (§3.2),
// so its time and session are kept.
type otherEntry struct {
	TimestampNs int64
	session     uint32
}

// phaseSpanEntry is a buffered phase span from traces: a phase.Span without
// the fields the converter derives from others (Record's PhaseSpan):
// its rank is the buffer's, its sequence its start, and it is neither a
// boolean-thread nor a synthetic-end span. Its session is the process
// that sent it (an index in the rank's session table), or the job id
// (jobSession) when the process named none.
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
	session    uint32
}

// jobSession is the session of a phase span whose process named none: the
// job id stands in, as it does for the samples of such a process.
const jobSession = math.MaxUint32

func (rb *Rank) phaseSpanEntryOf(rec *Record) phaseSpanEntry {
	s := &rec.PhaseSpan
	session := uint32(jobSession)
	if s.SessionID != "" && s.SessionID != rec.JobID {
		session = rb.sessionIndex(s.SessionID)
	}
	return phaseSpanEntry{
		ThreadName: s.ThreadName, ScopeID: s.ScopeID, Path: s.Path, ThreadID: s.ThreadID, StartNs: s.StartNs, EndNs: s.EndNs,
		TraceID: rec.PhaseTraceID, ParentID: rec.PhaseParentID, session: session,
	}
}

// span is the phase.Span of e, buffered for job on rank rb.
func (e *phaseSpanEntry) span(job string, rank int64, rb *Rank) phase.Span {
	session := job
	if e.session != jobSession {
		session = rb.sessions[e.session]
	}
	return phase.Span{
		SessionID: session, Rank: rank, ThreadID: e.ThreadID, ThreadName: e.ThreadName, ScopeID: e.ScopeID,
		Path: e.Path, StartNs: e.StartNs, EndNs: e.EndNs, Sequence: e.StartNs,
	}
}

// Rank is everything buffered for one (job, rank). Its rings together
// hold at most max_events_per_rank entries; each is in arrival order.
// Samples and markers, nearly all the buffered data, hold no pointers.
type Rank struct {
	// The fields a record reads and writes come first, together: a job
	// of thousands of ranks adds each record to another rank than the
	// last, and each cache line of the rank it touches is a miss.
	samples sampleColumns
	// sessions are the distinct session ids ("": none) of the rank's
	// samples, markers and other entries.
	sessions []string
	// frontNs is at most the earliest front time of the rings: while the
	// window's cutoff is not past it, trim has nothing to do.
	frontNs int64
	// newestNs is the newest event time the rank received (MinInt64:
	// none); the job's event time is made of its ranks' (watermark.go).
	newestNs int64
	// worldSize is the largest declared world size (0: none declared).
	worldSize int64
	// newestHiddenNs and newestHidden are the time and the hidden memory,
	// not clamped, of the rank's newest sample (evidence.RankData's
	// NewestHiddenNs and NewestHiddenBytes).
	newestHiddenNs, newestHidden int64
	// ev is evidence mode's marker intervals and accounting (nil in the
	// reference mode).
	ev *evidenceRank
	// ledger is the hidden-memory ledger's columns (ledger.go; a stream's
	// only, nil otherwise).
	ledger *ledgerColumns
	host   string

	markers   markerColumns
	compactAt int
	others    ring[otherEntry]
	// boundaries are stormlog phase_enter / phase_exit records, kept whole
	// for the phase index.
	boundaries ring[telemetry.Event]
	// phaseSpans are phase spans from traces. At most phaseWaiting of them
	// wait for a parent (ParentID set); evictions leave it too high, and
	// the next snapshot sets it right.
	phaseSpans   ring[phaseSpanEntry]
	phaseWaiting int
	// replica is the evaluation's copy of the samples (replica.go), made
	// by the first snapshot that reads it: a stream never does, and a
	// rank's struct, which the collector scans every cycle, stays smaller.
	replica *sampleReplica
	// claim is the process whose records the rank holds (claim.go); not
	// checkpointed: after a restart the first process to send claims it.
	claim claim
	// deviceWideThroughNs is the time of the newest sample whose used
	// memory was known to be the whole device's (0: none); evidence mode's
	// results say so (evidence.RankData.DeviceWideThroughNs).
	deviceWideThroughNs int64
}

// NoteHidden records the hidden memory of a sample of the rank at ts from
// its device used and allocator reserved bytes, when it is the newest.
func (rb *Rank) NoteHidden(ts, used, reserved int64) {
	if ts < rb.newestHiddenNs {
		return
	}
	rb.newestHiddenNs = ts
	switch {
	case reserved < 0 && used > math.MaxInt64+reserved:
		rb.newestHidden = math.MaxInt64
	case reserved > 0 && used < math.MinInt64+reserved:
		rb.newestHidden = math.MinInt64
	default:
		rb.newestHidden = used - reserved
	}
}

// NoteDeviceWide records that the rank's samples up to throughNs measured
// the whole device's used memory, other processes' included.
func (rb *Rank) NoteDeviceWide(throughNs int64) {
	rb.deviceWideThroughNs = max(rb.deviceWideThroughNs, throughNs)
}

// sessionIndex returns the index of session in the rank's session table,
// adding it on first use. Ranks see one session, or a few over restarts.
func (rb *Rank) sessionIndex(session string) uint32 {
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

// phaseSpansOfProcesses reports whether some phase span's session is its
// process's rather than the job's.
func (rb *Rank) phaseSpansOfProcesses() bool {
	for i := range rb.phaseSpans.len() {
		if rb.phaseSpans.at(i).session != jobSession {
			return true
		}
	}
	return false
}

// compactSessionsAt is the session table size at which sessions no longer
// referenced by a buffered entry are dropped, so that a rank cycling
// through session ids keeps a table no larger than its buffer.
const compactSessionsAt = 64

func (rb *Rank) compactSessions() {
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
	for i := range rb.samples.sessions {
		use(&rb.samples.sessions[i].session)
	}
	for i := range rb.markers.len() {
		use(&rb.markers.auxAt(i).session)
	}
	for i := range rb.others.len() {
		use(&rb.others.at(i).session)
	}
	for i := range rb.phaseSpans.len() {
		if e := rb.phaseSpans.at(i); e.session != jobSession {
			use(&e.session)
		}
	}
	rb.sessions = kept
}

func (rb *Rank) len() int {
	return rb.samples.len() + rb.markers.len() + rb.others.len() + rb.boundaries.len() + rb.phaseSpans.len() + rb.ev.len()
}

// ringID names one of a Rank's rings.
type ringID uint8

const (
	ringNone ringID = iota
	ringSamples
	ringMarkers
	ringOthers
	ringBoundaries
	ringPhaseSpans
	ringEvidence
)

// oldest returns the ring whose front entry has the earliest event time.
func (rb *Rank) oldest() (ringID, int64) {
	id, ts := ringNone, int64(math.MaxInt64)
	if rb.samples.len() > 0 && rb.samples.frontNs() < ts {
		id, ts = ringSamples, rb.samples.frontNs()
	}
	if rb.markers.len() > 0 && rb.markers.frontNs() < ts {
		id, ts = ringMarkers, rb.markers.frontNs()
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
	if _, evTs, ok := rb.ev.oldest(); ok && evTs < ts {
		id, ts = ringEvidence, evTs
	}
	return id, ts
}

// evictOldest drops the entry with the earliest front time; it makes room
// for one more entry when the rank is at max_events_per_rank.
func (rb *Rank) evictOldest() {
	id, _ := rb.oldest()
	switch id {
	case ringSamples:
		rb.samples.dropFront(1)
	case ringMarkers:
		rb.markers.popFront()
	case ringOthers:
		rb.others.popFront()
	case ringBoundaries:
		rb.boundaries.popFront()
	case ringPhaseSpans:
		rb.phaseSpans.popFront()
	case ringEvidence:
		which, _, _ := rb.ev.oldest()
		rb.ev.dropOldest(which)
	}
}

// trim drops front entries older than cutoffNs (phase spans by their end)
// and returns how many it dropped. Rings are in arrival order, so an old
// entry behind a newer front one stays until it reaches the front; a
// snapshot leaves such entries out. Each ring is trimmed on its own:
// dropping the globally oldest front entry until every front is at or
// after the cutoff leaves the same rings, one pass per ring is cheaper.
func (rb *Rank) trim(cutoffNs int64) int {
	if rb.frontNs >= cutoffNs {
		return 0
	}
	k := rb.samples.older(cutoffNs)
	rb.samples.dropFront(k)
	dropped := k
	dropped += rb.markers.trim(cutoffNs)
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
	dropped += rb.ev.trim(cutoffNs)
	_, rb.frontNs = rb.oldest()
	return dropped
}
