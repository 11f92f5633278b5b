// Package window is the one way from records to engine input: per job and
// rank, the records inside the event-time window as compact columns (samples,
// markers as times or intervals with their collective, NCCL's accounting
// series, phase boundaries and phase spans), their trimming and bounds, the
// duplicate rule, the job's collectives table, the snapshot an engine reads
// (attribution.ColumnInput, evidence.Input, the phase index) and the
// checkpoint codec of it all. The processor's store keeps one Job per job
// beside its lifecycle and limits; the CLI streams a file's records into one
// Job (Stream) and snapshots it once. It imports nothing from the
// OpenTelemetry Collector.
package window

import (
	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// MaxPhaseDepth bounds a phase span's path: the converter's ancestor walk
// and the window's completion of paths across batches stop there.
const MaxPhaseDepth = 64

// Kind says what a Record carries.
type Kind uint8

const (
	// KindSample is a sample formed from metrics (Event is set, event_type
	// "sample"). Metrics hands samples over in SampleRuns, which
	// expand into such Records.
	KindSample Kind = iota + 1
	// KindMarker is the marker timestamps of one span (MarkerTimesNs): its
	// start and end when it is a marker span, and each span event whose
	// name matches. Traces hands markers over in MarkerRuns, which
	// expand into such Records.
	KindMarker
	// KindPhaseSpan is a phase span from traces (PhaseSpan is set).
	KindPhaseSpan
	// KindStormlog is a validated stormlog TelemetryEvent from a log body
	// (Event is set; it may be a sample, a marker, a phase boundary, or any
	// other record, exactly as stormlog would read it: Stormlog says which).
	KindStormlog
	// KindAccounting is one point of NCCL's memory accounting gauge
	// (ingest.AccountingMetric, read when the mode reads NCCL's accounting:
	// ingest.EngineReads.Accounting): AccountingCommID and AccountingBytes
	// at TimestampNs.
	KindAccounting
)

// StormlogClass says what the reference reads a stormlog record as; a
// record may be several at once, or none (then it only counts for the
// trace start and its session's end).
type StormlogClass uint8

const (
	// StormlogSample is a usable sample (reference-semantics §2.3 S3).
	StormlogSample StormlogClass = 1 << iota
	// StormlogMarker matches a collective token (§2.3 S2).
	StormlogMarker
	// StormlogBoundary is a phase_enter or phase_exit record (§3.2).
	StormlogBoundary
)

// ClassifyStormlog is what the reference reads a validated stormlog
// event as.
func ClassifyStormlog(e *telemetry.Event) StormlogClass {
	var c StormlogClass
	if attribution.IsSample(e) {
		c |= StormlogSample
	}
	if attribution.IsMarker(e) {
		c |= StormlogMarker
	}
	if e.EventType == "phase_enter" || e.EventType == "phase_exit" {
		c |= StormlogBoundary
	}
	return c
}

// FileLine is where a record stands in a file: the file's path (else its
// name) and the record's position in it (its record number, else its byte
// offset plus one). Two records of one file at different positions are two
// records even when their text is the same; one record sent twice has one
// position. Position 0 is unknown.
type FileLine struct {
	File     string
	Position int64
}

// SpanRef identifies the marker span that produced a marker, for result links.
type SpanRef struct {
	TraceID [16]byte
	SpanID  [8]byte
}

// Record is one converted item, already assigned to a job and a rank.
type Record struct {
	Kind  Kind
	JobID string
	Rank  int64
	// WorldSize is the declared world size, 0 when unknown.
	WorldSize int64
	// Host is the rank's host name when known ("" otherwise).
	Host string
	// TimestampNs is the record's event time.
	TimestampNs int64
	// Event is set for KindSample and KindStormlog.
	Event telemetry.Event
	// Stormlog is the class of a KindStormlog record's Event.
	Stormlog StormlogClass
	// Line is where a KindStormlog record stands in the file it was read
	// from, when its log record says (filelog's include_file_record_number
	// or include_file_record_offset); zero otherwise.
	Line FileLine
	// Marker is set for KindMarker.
	Marker SpanRef
	// MarkerTimesNs are the marker times of a KindMarker record, in the
	// order above (TimestampNs is the first). The slice is reused by the
	// next call: copy it to keep it.
	MarkerTimesNs []int64
	// MarkerEndsNs and MarkerIdentities are set when markers are read as
	// the collectives they mark (ingest.EngineReads.CollectiveMarkers): per
	// marker time, the marker's end (a marker span's end; an event's own
	// time) and its collective identity (Valid false: a bare marker). Read
	// so, a marker span gives one marker, its interval, rather than one at
	// its start and one at its end. Reused like MarkerTimesNs.
	MarkerEndsNs     []int64
	MarkerIdentities []evidence.Identity
	// AccountingCommID and AccountingBytes are set for KindAccounting. The
	// communicator id points into the request: copy it to keep it.
	AccountingCommID string
	AccountingBytes  int64
	// PhaseSpan is set for KindPhaseSpan, with SessionID = JobID, Rank =
	// Rank, Sequence = StartNs, and ThreadIDBool and SyntheticEnd false (the
	// processor buffers it without those fields). Its Path is shared by
	// every Record of the same path and may be kept, but never modified.
	PhaseSpan phase.Span
	// PhaseTraceID is the trace of a KindPhaseSpan. PhaseParentID is empty
	// when PhaseSpan.Path is the whole path; otherwise it is the span id of
	// the ancestor (same trace) where the walk left the batch, and Path
	// holds only the names the batch gave: that ancestor's path goes in
	// front, once it arrives as a phase span.
	PhaseTraceID  [16]byte
	PhaseParentID [8]byte
}

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
	// EndsNs and Identities are set when markers are read as collectives
	// (see Record.MarkerEndsNs): TimesNs then holds a marker span's start
	// only, then its events' times.
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
