package ingest

import "github.com/collectiveattr/collectiveattr/window"

// MarkerRun is the marker spans of one (job, rank), a window entry type
// (window.MarkerRun).
type (
	MarkerRun  = window.MarkerRun
	MarkerSpan = window.MarkerSpan
)

// beginMarkerSpan hands the current run to emit when it is of another
// identity than the current one (the resolver's id): the next span's markers start a
// new run. It is called before a span's markers are appended, so that
// flushing never drops them.
func (c *tracesConverter) beginMarkerSpan(emit func(*MarkerRun)) {
	run := &c.markerRun
	id := &c.ids.id
	if len(run.Spans) > 0 && (run.JobID != id.job || run.Rank != id.rank || run.WorldSize != id.worldSize || run.Host != id.host) {
		c.flushMarkers(emit)
	}
}

// addMarkerSpan appends a span's markers (c.markerTimes[from:], and with
// Config.Reads.CollectiveMarkers c.markerEnds[from:] and c.markerIDs[from:]) to the run of
// the current identity, which beginMarkerSpan made the run's.
func (c *tracesConverter) addMarkerSpan(ref SpanRef, from int) {
	run := &c.markerRun
	if len(run.Spans) == 0 {
		id := &c.ids.id
		run.JobID, run.Rank, run.WorldSize, run.Host = id.job, id.rank, id.worldSize, id.host
	}
	n := len(c.markerTimes)
	sp := MarkerSpan{Ref: ref, TimesNs: c.markerTimes[from:n:n]}
	if c.cfg.Reads.CollectiveMarkers {
		sp.EndsNs, sp.Identities = c.markerEnds[from:n:n], c.markerIDs[from:n:n]
	}
	run.Spans = append(run.Spans, sp)
}

// flushMarkers hands the current run, if any, to emit and empties it.
func (c *tracesConverter) flushMarkers(emit func(*MarkerRun)) {
	if len(c.markerRun.Spans) > 0 {
		emit(&c.markerRun)
	}
	// The spans' times point into markerTimes, which may be dropped.
	clear(c.markerRun.Spans)
	c.markerRun.Spans = keptScratch(c.markerRun.Spans)
	c.markerTimes = keptScratch(c.markerTimes)
	if c.cfg.Reads.CollectiveMarkers {
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
