// Package ingest turns OTLP metrics, spans and log records into the engine's
// records (reference §1 TelemetryEvents, marker timestamps, phase spans),
// keyed by job and rank (contract §2, §3). It never mutates its input.
//
// Citations: "reference §N", bare §N, the steps S0–S12 and the releases R1/R2
// refer to docs/reference-semantics.md; "contract §N" to
// docs/processor-contract.md.
package ingest

import "github.com/collectiveattr/collectiveattr/window"

// The records the converter hands over are the window's entry types
// (package window): the processor buffers them per job as the CLI does.
type (
	Kind          = window.Kind
	StormlogClass = window.StormlogClass
	FileLine      = window.FileLine
	SpanRef       = window.SpanRef
	Record        = window.Record
)

// The record kinds and stormlog classes.
const (
	KindSample       = window.KindSample
	KindMarker       = window.KindMarker
	KindPhaseSpan    = window.KindPhaseSpan
	KindStormlog     = window.KindStormlog
	KindAccounting   = window.KindAccounting
	StormlogSample   = window.StormlogSample
	StormlogMarker   = window.StormlogMarker
	StormlogBoundary = window.StormlogBoundary
)

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
	// SkipRankConflict is an item of a rank whose records another host
	// sends at the same time: two processes claim one rank. The host that
	// held the rank first keeps it; the other's items are not merged in.
	SkipRankConflict SkipReason = "rank_conflict"
)

// Skip is one skipped item with a human-readable detail for the rate-limited log.
type Skip struct {
	Reason SkipReason
	Detail string
}
