// Package ingest turns OTLP metrics, spans and log records into the engine's
// records (reference §1 TelemetryEvents, marker timestamps, phase spans),
// keyed by job and rank (contract §2, §3). It never mutates its input.
//
// Citations: "reference §N", bare §N, the steps S0–S12 and the releases R1/R2
// refer to docs/reference-semantics.md; "contract §N" to
// docs/processor-contract.md.
package ingest

import (
	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

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
	// (AccountingMetric; Config.Evidence only): AccountingCommID and
	// AccountingBytes at TimestampNs.
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

// classifyStormlog is the class of a validated stormlog event.
func classifyStormlog(e *telemetry.Event) StormlogClass {
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
	// MarkerEndsNs and MarkerIdentities are set with Config.Evidence: per
	// marker time, the marker's end (a marker span's end; an event's own
	// time) and its collective identity (Valid false: a bare marker). In
	// that mode a marker span gives one marker, its interval, rather than
	// one at its start and one at its end. Reused like MarkerTimesNs.
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

// SkipReason is why an input item was not converted (self-telemetry label).
type SkipReason string

const (
	SkipNoIdentity   SkipReason = "no_identity"
	SkipInvalidValue SkipReason = "invalid_value"
	SkipStale        SkipReason = "stale"
	SkipOverLimit    SkipReason = "over_limit"
	SkipUnjoinable   SkipReason = "unjoinable"
	// SkipDuplicate is a metric point of a (rank, metric role, timestamp)
	// already received: the first one wins.
	SkipDuplicate SkipReason = "duplicate"
	// SkipOrphaned is a partner point (allocator reserved, device free,
	// ...) that left the join buffer with no device-used point of its rank
	// within sample_join_tolerance: it never took part in a sample.
	SkipOrphaned SkipReason = "orphaned"
	// SkipFuture is an item whose timestamp is more than max_future_skew
	// ahead of the wall clock: a clock error, kept out of the window.
	SkipFuture SkipReason = "future"
	// SkipAmbiguousDevice is a device-level point whose (host, GPU index)
	// several live ranks claim and whose GPU UUID (if any) joined none:
	// ranks in containers all see their GPU as index 0.
	SkipAmbiguousDevice SkipReason = "ambiguous_device"
	// SkipSharedDevice is a device-level point of a GPU (or MIG instance)
	// that several live ranks use: time-slicing, MPS, or several jobs. Its
	// device-wide memory is no one rank's.
	SkipSharedDevice SkipReason = "shared_device"
	// SkipMIGUnmapped is a device-level point of a MIG-partitioned GPU that
	// cannot be given to one instance's rank: an instance point whose GPU
	// its rank names without an instance, or a whole-GPU point of a GPU
	// whose ranks name instances.
	SkipMIGUnmapped SkipReason = "mig_unmapped"
)

// Skip is one skipped item with a human-readable detail for the rate-limited log.
type Skip struct {
	Reason SkipReason
	Detail string
}
