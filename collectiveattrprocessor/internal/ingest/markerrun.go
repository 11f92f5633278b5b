package ingest

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
}

// Record returns span i as the KindMarker Record it stands for.
func (r *MarkerRun) Record(i int) Record {
	sp := &r.Spans[i]
	return Record{
		Kind: KindMarker, JobID: r.JobID, Rank: r.Rank, WorldSize: r.WorldSize, Host: r.Host,
		TimestampNs: sp.TimesNs[0], Marker: sp.Ref, MarkerTimesNs: sp.TimesNs,
	}
}

// addMarkerSpan appends a span's marker times (c.markerTimes[from:]) to the
// run of the current identity (c.id), handing the run of another identity
// to emit first.
func (c *Converter) addMarkerSpan(ref SpanRef, from int, emit func(*MarkerRun)) {
	run := &c.markerRun
	id := &c.id
	if len(run.Spans) > 0 && (run.JobID != id.job || run.Rank != id.rank || run.WorldSize != id.worldSize || run.Host != id.host) {
		times := c.markerTimes[from:]
		c.flushMarkers(emit)
		// This span's times move to the front of the emptied buffer.
		c.markerTimes, from = append(c.markerTimes, times...), 0
	}
	if len(run.Spans) == 0 {
		run.JobID, run.Rank, run.WorldSize, run.Host = id.job, id.rank, id.worldSize, id.host
	}
	run.Spans = append(run.Spans, MarkerSpan{Ref: ref, TimesNs: c.markerTimes[from:len(c.markerTimes):len(c.markerTimes)]})
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
