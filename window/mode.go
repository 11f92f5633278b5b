package window

import (
	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Mode is what a window buffers for its attribution mode beyond what every
// mode keeps (samples, other stormlog records, phase boundaries, phase
// spans): markers as the mode's engine reads them, and NCCL's accounting
// when it reads it. Config.Mode chooses it once; the store asks it, never
// which mode runs. A mode that reads the buffers differently is a new
// Mode here beside the processor's engine for it.
type Mode interface {
	// Name is the mode's name (attribution.ModeReference,
	// attribution.ModeEvidence), kept in checkpoints: a job is restored
	// only into the mode that buffered it.
	Name() string

	// readStormlog reads what a stormlog record gives the mode, before
	// its duplicate check and its push.
	readStormlog(job *Job, rec *Record) stormlogRead
	// holds reports whether rb already buffers what rec would add.
	holds(rb *Rank, rec *Record, read *stormlogRead) bool
	pushMarkerSpan(job *Job, rb *Rank, rec *Record) int
	pushAccounting(job *Job, rb *Rank, rec *Record) int
	pushStormlog(job *Job, rb *Rank, rec *Record, read *stormlogRead) int

	// classify is what the mode reads of a stormlog record's class
	// (ClassifyStormlog), for a Stream, which classifies its records
	// itself.
	classify(e *telemetry.Event) StormlogClass

	// BatchesMarkerSpans reports whether a run of marker spans may be
	// buffered at once (Job.AddMarkerSpans) rather than one span at a
	// time (Job.Add).
	BatchesMarkerSpans() bool

	// appendLinks appends to dst the marker spans a result of the mode's
	// engine links (Job.AppendLinks).
	appendLinks(job *Job, dst []SpanRef, r *attribution.Result) []SpanRef
}

// The modes.
var (
	// ReferenceMode buffers marker times (stormlog's reference).
	ReferenceMode Mode = referenceMode{}
	// EvidenceMode buffers marker intervals with their collective
	// identity, and NCCL's memory accounting (docs/evidence-mode.md).
	EvidenceMode Mode = evidenceMode{}
)

// stormlogRead is what a stormlog record gives a mode beyond the
// reference's classification (Record.Stormlog): in evidence mode,
// a sample, an accounting point or a marker interval.
type stormlogRead struct {
	kind  readKind
	comm  string
	bytes int64
	mk    evidenceMarker
}

type readKind uint8

const (
	readNone readKind = iota
	readSample
	readAccounting
	readInterval
)

type referenceMode struct{}

func (referenceMode) Name() string { return attribution.ModeReference }

func (referenceMode) readStormlog(*Job, *Record) stormlogRead { return stormlogRead{} }

func (referenceMode) holds(rb *Rank, rec *Record, _ *stormlogRead) bool {
	return rb.holdsReference(rec)
}

func (referenceMode) pushMarkerSpan(job *Job, rb *Rank, rec *Record) int {
	return job.pushMarkers(rb, rec)
}

func (referenceMode) BatchesMarkerSpans() bool { return true }

func (referenceMode) classify(e *telemetry.Event) StormlogClass { return ClassifyStormlog(e) }

// pushAccounting buffers nothing: the reference does not read NCCL's
// accounting.
func (referenceMode) pushAccounting(*Job, *Rank, *Record) int { return 0 }

func (referenceMode) pushStormlog(job *Job, rb *Rank, rec *Record, _ *stormlogRead) int {
	return job.pushStormlog(rb, rec)
}

// appendLinks links the spans of the markers at the result's marker times.
func (referenceMode) appendLinks(job *Job, dst []SpanRef, r *attribution.Result) []SpanRef {
	rb := job.Rank(r.Rank)
	if rb == nil {
		return dst
	}
	return appendMarkerLinks(dst, rb, r.MarkerTimesNs)
}

type evidenceMode struct{}

func (evidenceMode) Name() string { return attribution.ModeEvidence }

func (evidenceMode) readStormlog(job *Job, rec *Record) stormlogRead {
	return job.readStormlogEvidence(rec)
}

func (evidenceMode) holds(rb *Rank, rec *Record, read *stormlogRead) bool {
	return rb.holdsEvidence(rec, read)
}

func (evidenceMode) pushMarkerSpan(job *Job, rb *Rank, rec *Record) int {
	return job.pushSpanEvidence(rb, rec)
}

// BatchesMarkerSpans is false: a span's collective is interned per marker.
func (evidenceMode) BatchesMarkerSpans() bool { return false }

// classify leaves the marker bit out: evidence mode looks for a
// collective token only in a record without a collective identity
// (markerOf).
func (evidenceMode) classify(e *telemetry.Event) StormlogClass {
	var c StormlogClass
	if attribution.IsSample(e) {
		c |= StormlogSample
	}
	if e.EventType == "phase_enter" || e.EventType == "phase_exit" {
		c |= StormlogBoundary
	}
	return c
}

func (evidenceMode) pushAccounting(job *Job, rb *Rank, rec *Record) int {
	return job.pushAccounting(rb, rec)
}

func (evidenceMode) pushStormlog(job *Job, rb *Rank, rec *Record, read *stormlogRead) int {
	return job.pushStormlogEvidence(rb, rec, read)
}

func (evidenceMode) appendLinks(job *Job, dst []SpanRef, r *attribution.Result) []SpanRef {
	return job.appendEvidenceLinks(dst, r)
}
