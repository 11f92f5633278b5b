package window

import (
	"math"
	"slices"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Add buffers one record of rank rb (a rank of j, found or added by the
// caller once the record was admitted): it refuses a duplicate (false),
// moves the job's event time, and pushes what the mode reads of the
// record. added is the number of entries pushed (0: the record was
// accepted but keeps nothing, or all its markers were stale).
func (j *Job) Add(rb *Rank, rec *Record) (accepted bool, added int) {
	ts := rec.TimestampNs
	switch rec.Kind {
	case KindPhaseSpan:
		ts = rec.PhaseSpan.EndNs
	case KindMarker:
		if len(rec.MarkerTimesNs) == 0 {
			return false, 0
		}
		ts = slices.Max(rec.MarkerTimesNs)
	}
	mode := j.cfg.Mode
	// The read lives in the job: a local whose address goes to the mode's
	// methods would be allocated per record.
	read := &j.read
	*read = stormlogRead{}
	if rec.Kind == KindStormlog {
		*read = mode.readStormlog(j, rec)
	}
	if j.duplicate(rb, rec, read) {
		j.counts.Duplicate++
		return false, 0
	}
	// The window moves before the push, so that making room on a full rank
	// drops what the record pushes out of the window first.
	j.advance(rb, ts)
	switch rec.Kind {
	case KindMarker:
		added = mode.pushMarkerSpan(j, rb, rec)
	case KindAccounting:
		added = mode.pushAccounting(j, rb, rec)
	case KindPhaseSpan:
		added = j.pushPhaseSpan(rb, rec)
	case KindStormlog:
		added = mode.pushStormlog(j, rb, rec, read)
	}
	if added > 0 {
		j.added(rb, added, ts)
	}
	return true, added
}

// Note records what a record said of its rank: its declared world size
// (0: none) and host ("": unknown).
func (rb *Rank) Note(worldSize int64, host string) {
	if worldSize > rb.worldSize {
		rb.worldSize = worldSize
	}
	if host != "" && host != rb.host {
		rb.host = host
	}
}

// AddMarkerSpans buffers the marker spans of one rank in the modes that
// buffer a span's markers as times (Mode.BatchesMarkerSpans): a span its
// rank already buffers is refused (dup counts those at the front), and
// when the rank has room for the rest and none is stale even against
// their newest time, they are pushed with the per-rank bookkeeping done
// once (done). Otherwise the caller adds spans[dup:] one at a time (Add).
func (j *Job) AddMarkerSpans(rb *Rank, spans []MarkerSpan) (dup int, done bool) {
	dup = duplicateSpans(rb, spans)
	j.counts.Duplicate += int64(dup)
	if dup == len(spans) {
		return dup, true
	}
	spans = spans[dup:]
	markers, oldest, newest := 0, int64(math.MaxInt64), j.newestNs
	for i := range spans {
		times := spans[i].TimesNs
		markers += len(times)
		oldest, newest = min(oldest, slices.Min(times)), max(newest, slices.Max(times))
	}
	maxCap := j.cfg.MaxEventsPerRank
	if rb.len()+markers > maxCap || oldest < cutoffAt(newest, j.cfg.Window) {
		return dup, false
	}
	session := rb.sessionIndex("")
	for i := range spans {
		meta := markerMeta{session: session, ref: rb.markers.refCode(spans[i].Ref, maxCap)}
		for _, ts := range spans[i].TimesNs {
			rb.markers.push(ts, meta, maxCap)
		}
	}
	j.addedRun(rb, markers, oldest, newest)
	return dup, true
}

// AddSamples buffers n samples of rank rb in time order, sample i at
// times(i) with its hidden-memory gap and device total (<= 0: unknown)
// as sample(i) gives them, of session: the samples at the front that the
// rank already buffers are refused (dup counts them), every one after is
// buffered. The first must be inside the window (the caller admitted it).
func (j *Job) AddSamples(rb *Rank, session string, n int, sample func(i int) (ts, gap, total int64)) (dup int) {
	for dup < n {
		ts, gap, total := sample(dup)
		if !rb.holdsSample(ts, gap, total, rb.existingSession(session)) {
			break
		}
		dup++
	}
	j.counts.Duplicate += int64(dup)
	if dup == n {
		return dup
	}
	idx := rb.sessionIndex(session)
	maxCap := j.cfg.MaxEventsPerRank
	if rb.len()+n-dup > maxCap {
		// Each sample makes room for itself, as a record of its own would.
		// (None is stale: they are in time order, and the first was not.)
		for i := dup; i < n; i++ {
			ts, gap, total := sample(i)
			j.advance(rb, ts)
			j.makeRoom(rb)
			rb.samples.push(ts, gap, total, idx, maxCap)
			j.added(rb, 1, ts)
		}
		return dup
	}
	// The common case: the rank has room for the run, and the samples are
	// in time order, so none is stale once the first is not.
	first, last := rb.samples.pushRun(dup, n, idx, maxCap, sample)
	j.addedRun(rb, n-dup, first, last)
	return dup
}

// addedRun accounts for entries pushed to rb at once (their times from
// oldestNs to newestNs): the job's newest time moves before the lazy
// trim, as it does per record.
func (j *Job) addedRun(rb *Rank, entries int, oldestNs, newestNs int64) {
	j.advance(rb, newestNs)
	j.events += entries
	j.uncounted = 0
	rb.frontNs = min(rb.frontNs, oldestNs)
	j.trimLazily(rb)
}

// added accounts for n entries of one record at ts pushed to rb.
func (j *Job) added(rb *Rank, n int, ts int64) {
	j.events += n
	j.uncounted = 0
	rb.frontNs = min(rb.frontNs, ts)
	j.trimLazily(rb)
}

// trimLazily trims the rank written to once its oldest entry is trimSlack
// behind the window, so that a trim drops a run of entries rather than one
// per record; Trim trims every rank exactly.
func (j *Job) trimLazily(rb *Rank) {
	if rb.frontNs < j.lazyCutoffNs() {
		j.evicted(BoundWindow, rb.trim(j.cutoffNs()))
	}
}

func (j *Job) evicted(b Bound, n int) {
	if n == 0 {
		return
	}
	j.counts.Evicted[b] += int64(n)
	j.events -= n
}

// makeRoom evicts the rank's oldest entry when it is at max_events_per_rank.
// Entries past the window go first, as what they are: the trim on push is
// lazy, so a full rank may still hold some.
func (j *Job) makeRoom(rb *Rank) {
	// No rank holds more than the job: while the job's entries, with
	// those pushed since they were last counted, are below the bound, the
	// rank's are too, and its rings (scattered over its buffer, one cache
	// miss each on a job of thousands of ranks) need not be counted.
	if j.events+j.uncounted < j.cfg.MaxEventsPerRank {
		j.uncounted++
		return
	}
	if rb.len() < j.cfg.MaxEventsPerRank {
		j.uncounted++
		return
	}
	j.evicted(BoundWindow, rb.trim(j.cutoffNs()))
	if rb.len() >= j.cfg.MaxEventsPerRank {
		rb.evictOldest()
		j.evicted(BoundMaxEventsPerRank, 1)
	}
	j.uncounted++
}

// pushMarkers buffers the marker times of one marker span; a time before
// the window is refused as stale, as a record would be. When the rank has
// room for them all and none is stale, the span is stored once and its
// markers are written straight into the columns.
func (j *Job) pushMarkers(rb *Rank, rec *Record) int {
	times := rec.MarkerTimesNs
	maxCap := j.cfg.MaxEventsPerRank
	cutoff := j.cutoffNs()
	oldest := slices.Min(times)
	meta := markerMeta{session: rb.sessionIndex("")}
	if rb.len()+len(times) <= maxCap && oldest >= cutoff {
		meta.ref = rb.markers.refCode(rec.Marker, maxCap)
		for _, ts := range times {
			rb.markers.push(ts, meta, maxCap)
		}
		rb.frontNs = min(rb.frontNs, oldest)
		return len(times)
	}
	n := 0
	for _, ts := range times {
		if ts < cutoff {
			j.counts.Stale++
			continue
		}
		// Making room may evict the span's own earlier markers and with
		// them its table entry, so the entry is looked up per marker.
		j.makeRoom(rb)
		rb.markers.pushRef(ts, rec.Marker, meta.session, maxCap)
		rb.frontNs = min(rb.frontNs, ts)
		n++
	}
	return n
}

func (j *Job) pushPhaseSpan(rb *Rank, rec *Record) int {
	j.makeRoom(rb)
	e := rb.phaseSpanEntryOf(rec)
	if e.ParentID != noParent {
		rb.phaseWaiting++
	}
	rb.phaseSpans.push(e, j.cfg.MaxEventsPerRank)
	return 1
}

// pushStormlog buffers a stormlog record the way the reference reads it
// (rec.Stormlog says which): a usable sample feeds the samples
// (reference-semantics §2.3 S3), a record whose text matches a collective
// token is a marker (S2), phase boundaries feed the phase index (§3.2)
// when phases are on, and every record counts for the trace start (S6).
func (j *Job) pushStormlog(rb *Rank, rec *Record) int {
	e := &rec.Event
	maxCap := j.cfg.MaxEventsPerRank
	n := 0
	if rec.Stormlog&StormlogSample != 0 {
		j.pushStormlogSample(rb, e)
		n++
	}
	if rec.Stormlog&StormlogMarker != 0 {
		j.makeRoom(rb)
		rb.markers.pushRef(e.TimestampNs, SpanRef{}, rb.sessionIndex(e.SessionID), maxCap)
		n++
	}
	return j.pushBoundaryOrOther(rb, rec, n)
}

// pushStormlogSample buffers the sample a stormlog sample record e gives.
func (j *Job) pushStormlogSample(rb *Rank, e *telemetry.Event) {
	j.makeRoom(rb)
	total := int64(0)
	if e.DeviceTotalBytes.Valid {
		total = e.DeviceTotalBytes.Value
	}
	rb.samples.push(e.TimestampNs, attribution.HiddenGap(e.DeviceUsedBytes.Value, e.AllocatorReservedBytes.Value), total, rb.sessionIndex(e.SessionID), j.cfg.MaxEventsPerRank)
	rb.NoteHidden(e.TimestampNs, e.DeviceUsedBytes.Value, e.AllocatorReservedBytes.Value)
}

// pushBoundaryOrOther buffers what is left of a stormlog record of which
// n entries were buffered as samples, markers or accounting: its phase
// boundary, and, when nothing else kept it, an entry that counts for the
// trace start. Without phases a boundary counts only for the trace start
// (S6), as any other record: it is kept as one.
func (j *Job) pushBoundaryOrOther(rb *Rank, rec *Record, n int) int {
	e := &rec.Event
	maxCap := j.cfg.MaxEventsPerRank
	if j.cfg.Phases && rec.Stormlog&StormlogBoundary != 0 {
		j.makeRoom(rb)
		rb.boundaries.push(*e, maxCap)
		n++
	}
	if n == 0 {
		j.makeRoom(rb)
		rb.others.push(otherEntry{TimestampNs: e.TimestampNs, session: rb.sessionIndex(e.SessionID)}, maxCap)
		n++
	}
	return n
}
