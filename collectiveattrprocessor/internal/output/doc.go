// Package output builds the processor's result telemetry (contract §5):
// result spans, result metrics and result log records. Its functions are
// pure: they append to the pdata they are given and keep no state. The
// state kept between reports is HiddenPeaks' (the peaks of
// gpu.memory.hidden per (job, rank)), with RankIndex, its map by (job,
// rank), which the processor's over-cap hidden points use too.
//
// Citations: "reference §N", bare §N, the steps S0–S12 and the releases R1/R2
// refer to docs/reference-semantics.md; "contract §N" to
// docs/processor-contract.md.
package output

import (
	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
)

// ScopeName is the instrumentation scope of everything the processor emits.
const ScopeName = "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

// ServiceName is the service.name of the result resources.
const ServiceName = "collectiveattr"

// Item is one result to emit, with what the result itself does not carry.
type Item struct {
	JobID string
	// Host is the rank's host name, "" when unknown.
	Host   string
	Preset string
	// Result points into the round's results, not a copy: a world-wide
	// spike claims one per rank. Read it, do not modify it.
	Result *attribution.Result
	// Links are the marker spans of the result's own rank that contributed
	// to it.
	Links []ingest.SpanRef
	// Collective is the collective the result matched, shared by the items
	// that matched it; nil when none did.
	Collective *CollectiveSpan
}
