package ingest

import "github.com/collectiveattr/collectiveattr/evidence"

// MarkerRun is the marker spans of one (job, rank) that one ConvertTraces
// call found one after another, in input order. Markers are handed over a
// run at a time, like samples (SampleRun): a rank's spans come together,
// and the processor's per-record lookups and bookkeeping cost as much as
// buffering a span's markers. Record expands a span into the KindMarker
// Record it stands for.
//
// The run is the Converter's and is reused by the next run: the handler
// copies what it keeps.
type MarkerRun struct {
	JobID string
	Rank  int64
	// WorldSize is the declared world size, 0 when unknown.
	WorldSize int64
	// Host is the rank's host name, "" when unknown.
	Host  string
	Spans []MarkerSpan
}

// MarkerSpan is the marker times of one span: its start and end when it is
// a marker span, then the time of each span event whose name matches.
type MarkerSpan struct {
	Ref     SpanRef
	TimesNs []int64
	// EndsNs and Identities are set with Config.Evidence (see
	// Record.MarkerEndsNs): in that mode TimesNs holds a marker span's
	// start only, then its events' times.
	EndsNs     []int64
	Identities []evidence.Identity
}

// Record returns span i as the KindMarker Record it stands for.
func (r *MarkerRun) Record(i int) Record {
	sp := &r.Spans[i]
	return Record{
		Kind: KindMarker, JobID: r.JobID, Rank: r.Rank, WorldSize: r.WorldSize, Host: r.Host,
		TimestampNs: sp.TimesNs[0], Marker: sp.Ref, MarkerTimesNs: sp.TimesNs,
		MarkerEndsNs: sp.EndsNs, MarkerIdentities: sp.Identities,
	}
}

// beginMarkerSpan hands the current run to emit when it is of another
// identity than the current one (c.id): the next span's markers start a
// new run. It is called before a span's markers are appended, so that
// flushing never drops them.
func (c *Converter) beginMarkerSpan(emit func(*MarkerRun)) {
	run := &c.markerRun
	id := &c.id
	if len(run.Spans) > 0 && (run.JobID != id.job || run.Rank != id.rank || run.WorldSize != id.worldSize || run.Host != id.host) {
		c.flushMarkers(emit)
	}
}

// addMarkerSpan appends a span's markers (c.markerTimes[from:], and with
// Config.Evidence c.markerEnds[from:] and c.markerIDs[from:]) to the run of
// the current identity, which beginMarkerSpan made the run's.
func (c *Converter) addMarkerSpan(ref SpanRef, from int) {
	run := &c.markerRun
	if len(run.Spans) == 0 {
		id := &c.id
		run.JobID, run.Rank, run.WorldSize, run.Host = id.job, id.rank, id.worldSize, id.host
	}
	n := len(c.markerTimes)
	sp := MarkerSpan{Ref: ref, TimesNs: c.markerTimes[from:n:n]}
	if c.cfg.Evidence {
		sp.EndsNs, sp.Identities = c.markerEnds[from:n:n], c.markerIDs[from:n:n]
	}
	run.Spans = append(run.Spans, sp)
}

// flushMarkers hands the current run, if any, to emit and empties it.
func (c *Converter) flushMarkers(emit func(*MarkerRun)) {
	if len(c.markerRun.Spans) > 0 {
		emit(&c.markerRun)
	}
	// The spans' times point into markerTimes, which may be dropped.
	clear(c.markerRun.Spans)
	c.markerRun.Spans = keptScratch(c.markerRun.Spans)
	c.markerTimes = keptScratch(c.markerTimes)
	if c.cfg.Evidence {
		// The identities' strings point into the request.
		clear(c.markerIDs)
		c.markerEnds, c.markerIDs = keptScratch(c.markerEnds), keptScratch(c.markerIDs)
		clear(c.markerLists)
		c.markerLists = keptScratch(c.markerLists)
	}
}

// maxKeptScratch is the most elements a reused per-call buffer keeps
// between calls: one huge batch does not pin its memory.
const maxKeptScratch = 4096

// keptScratch empties a reused buffer, dropping it when it grew past
// maxKeptScratch. Its elements are left as they are: clear those that
// point elsewhere first.
func keptScratch[T any](buf []T) []T {
	if cap(buf) > maxKeptScratch {
		return nil
	}
	return buf[:0]
}
