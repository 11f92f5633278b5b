package window

import (
	"strings"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Ingestion is idempotent for identical items: a sample, a marker span or a
// stormlog record identical to one its rank still buffers (same time, same
// content) is refused as ErrDuplicate, so that a client's retry of a batch
// the processor already buffered (the downstream refused it after it was
// buffered), or a replay, counts once. An item that left the buffer (out
// of the window or evicted) cannot be recognised; a replay of that is
// stale, or, for a job forgotten since, kept from emitting again by the
// emitted memory (emitted.go).
//
// Content alone cannot tell a resent record from a second record with the
// same text: a stormlog file may hold one line twice, and the CLI counts
// both. A record read from a file by position (FileLine: filelog's
// record number or offset) past the furthest position the job accepted
// from that file is new whatever its content; one at or before it is
// judged by content as above (a file read again from its start after a
// collector restart, or a retried batch). filelog reads a file in order,
// so the furthest position is where its reading stands.

// holds reports whether the ring holds an entry at ts for which match(i)
// holds (i: the entry's index, oldest first). The search reads no entry
// when ts is after every time pushed (the common case), searches in time
// order, and reads every entry only on a ring that received times out of
// order.
func (r *timedRing[A]) holds(ts int64, match func(int) bool) bool {
	if r.n == 0 || ts > r.maxNs {
		return false
	}
	i := 0
	if !r.disordered {
		i = r.older(ts)
	}
	for ; i < r.n; i++ {
		t := r.at(i)
		if t == ts && match(i) {
			return true
		}
		if t > ts && !r.disordered {
			return false
		}
	}
	return false
}

// holdsSample reports whether rb buffers a sample at ts with this gap,
// device total (<= 0: unknown) and session.
func (rb *Rank) holdsSample(ts, gap, total int64, session uint32) bool {
	total = max(total, 0)
	c := &rb.samples
	return c.holds(ts, func(i int) bool {
		return *c.auxAt(i) == gap && c.totalAt(i) == total && c.sessionAt(i) == session
	})
}

// holdsSpan reports whether rb buffers a marker at ts of span ref (a zero
// ref: a marker of no span, from a stormlog record of session).
func (rb *Rank) holdsSpan(ts int64, ref SpanRef, session uint32) bool {
	return rb.markers.holds(ts, func(i int) bool {
		got, ok := rb.markers.ref(i)
		if ref == (SpanRef{}) {
			return !ok && rb.markers.auxAt(i).session == session
		}
		return ok && got == ref
	})
}

// duplicateSpans returns how many marker spans from the front of spans rb
// already buffers (a span is buffered when its first marker is).
func duplicateSpans(rb *Rank, spans []MarkerSpan) int {
	for i := range spans {
		if !rb.holdsSpan(spans[i].TimesNs[0], spans[i].Ref, 0) {
			return i
		}
	}
	return len(spans)
}

// duplicate reports whether rec is a record the job already holds: by its
// file position when that says it is new, else by content
// (the mode's holds). read is a stormlog record as the mode read it.
func (j *Job) duplicate(rb *Rank, rec *Record, read *stormlogRead) bool {
	if j.cfg.Stream {
		return false
	}
	if rec.Line.Position == 0 {
		return j.cfg.Mode.holds(rb, rec, read)
	}
	if !j.lines.past(rec.Line) && j.cfg.Mode.holds(rb, rec, read) {
		return true
	}
	j.lines.note(rec.Line)
	return false
}

// holdsReference reports whether rb already buffers what rec would add in
// the reference mode: its marker span, or its stormlog sample or
// collective marker.
func (rb *Rank) holdsReference(rec *Record) bool {
	switch rec.Kind {
	case KindMarker:
		return rb.holdsSpan(rec.MarkerTimesNs[0], rec.Marker, 0)
	case KindStormlog:
		e := &rec.Event
		switch {
		case rec.Stormlog&StormlogSample != 0:
			return rb.holdsStormlogSample(e)
		case rec.Stormlog&StormlogMarker != 0:
			return rb.holdsSpan(e.TimestampNs, SpanRef{}, rb.existingSession(e.SessionID))
		}
	}
	return false
}

// holdsEvidence reports whether rb already buffers what rec would add in
// evidence mode: its marker span's intervals, its accounting point, or
// (as read read it) its stormlog sample, accounting point or marker
// interval.
func (rb *Rank) holdsEvidence(rec *Record, read *stormlogRead) bool {
	switch rec.Kind {
	case KindMarker:
		return rb.holdsEvidenceSpan(rec.MarkerTimesNs[0], rec.Marker)
	case KindAccounting:
		return rb.holdsAccounting(rec.AccountingCommID, rec.TimestampNs, rec.AccountingBytes)
	case KindStormlog:
		e := &rec.Event
		switch read.kind {
		case readSample:
			return rb.holdsStormlogSample(e)
		case readAccounting:
			return rb.holdsAccounting(read.comm, e.TimestampNs, read.bytes)
		case readInterval:
			return rb.holdsStormlogInterval(e.TimestampNs, &read.mk)
		}
	}
	return false
}

// holdsStormlogSample reports whether rb buffers the sample of stormlog
// sample record e.
func (rb *Rank) holdsStormlogSample(e *telemetry.Event) bool {
	total := int64(0)
	if e.DeviceTotalBytes.Valid {
		total = e.DeviceTotalBytes.Value
	}
	gap := attribution.HiddenGap(e.DeviceUsedBytes.Value, e.AllocatorReservedBytes.Value)
	return rb.holdsSample(e.TimestampNs, gap, total, rb.existingSession(e.SessionID))
}

// fileLines is, per file a job's records were read from, the furthest
// position accepted (FileLine). Files are few per job (one per
// rank, and their rotations); a job that reads from more than
// maxFileLines starts over, its records then judged by content alone
// until their file's position is known again.
type fileLines map[string]int64

const maxFileLines = 4096

// past reports whether l is past the furthest position accepted from its
// file; false when none is known.
func (f fileLines) past(l FileLine) bool {
	furthest, ok := f[l.File]
	return ok && l.Position > furthest
}

// note records that the record at l was accepted.
func (f *fileLines) note(l FileLine) {
	furthest, ok := (*f)[l.File]
	switch {
	case ok:
		if l.Position > furthest {
			(*f)[l.File] = l.Position
		}
		return
	case *f == nil || len(*f) >= maxFileLines:
		*f = fileLines{}
	}
	(*f)[strings.Clone(l.File)] = l.Position
}

// existingSession is the index of session in the rank's table, or one
// past the table when it is not there (no entry has it).
func (rb *Rank) existingSession(session string) uint32 {
	for i := len(rb.sessions) - 1; i >= 0; i-- {
		if rb.sessions[i] == session {
			return uint32(i)
		}
	}
	return uint32(len(rb.sessions))
}
