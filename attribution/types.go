// Package attribution is a bit-exact Go port of stormlog's collective
// attribution (reference §2): it decides which hidden-memory spikes of a
// distributed job come from NCCL collective communication.
//
// Citations: "reference §N", bare §N, the steps S0–S12 and the releases R1/R2
// refer to docs/reference-semantics.md.
package attribution

import (
	"math"

	"github.com/collectiveattr/collectiveattr/phase"
)

// Config is the reference's CollectiveAttributionConfig (§2.2).
type Config struct {
	Preset                string
	MinSamplesPerRank     int64
	MinGapBytes           int64
	MinGapRatio           float64
	RobustZscoreThreshold float64
	MarkerWindowNs        int64
	IntervalPaddingNs     int64
	SynchronyWindowNs     int64
	MinSynchronyRatio     float64
	MinConfidence         float64

	// minGapBytesDivisor is an override of min_gap_bytes with a fraction
	// (0: none). MinGapBytes is then its ceiling, which the integer gaps
	// compare with as with the value, and the byte strength divides by the
	// value itself, as Python's int / float does.
	minGapBytesDivisor float64
}

// Evidence is CollectiveAttributionEvidence.
type Evidence struct {
	MarkerHits        int64
	SynchronizedRanks int64
	ExpectedWorldSize int64
	SynchronyRatio    float64
	PeakGapBytes      int64
	PeakGapRatio      *float64 // nil when the device total is unknown
	RobustZscore      float64
}

// Result is CollectiveAttributionResult.
type Result struct {
	Rank            int64
	IntervalStartNs int64
	// IntervalEndNs is unsigned: the reference never clamps the end, and
	// Python's ints grow, so a padding can carry it past the int64 range.
	// Event times and the padding are never negative once validated (the
	// telemetry decoder, ResolveConfig), so an end is not either, and a
	// time plus a padding always fits. EndNs gives it as an int64.
	IntervalEndNs    uint64
	Classification   string
	Confidence       float64
	ReasonCodes      []string
	Evidence         Evidence
	PhaseAttribution *phase.Attribution
	// MarkerTimesNs are the rank-local marker timestamps that contributed
	// (sorted, merged results carry the union). Not part of the reference
	// serialisation; the processor uses them to link result spans to markers.
	MarkerTimesNs []int64

	// The fields below are set by evidence mode only (Mode "evidence"); a
	// reference result leaves them zero and serialises without them.

	// Mode is "" for the reference mode and ModeEvidence for evidence mode.
	Mode string
	// Kind is KindTransient or KindPersistent.
	Kind string
	// ExcessBytes is the peak hidden memory above the rank's own baseline
	// (for a persistent step: the step's height).
	ExcessBytes int64
	// Collective is the matched collective; nil when none matched. The
	// results of one evaluation that matched the same collective share one
	// CollectiveMatch (and its Members): read it, do not modify it.
	Collective *CollectiveMatch
	// NCCLAccountedBytes is NCCL's reported growth of this rank's
	// communicators over the interval; nil without accounting data.
	NCCLAccountedBytes *int64
}

// Attribution modes.
const (
	ModeReference = "reference"
	ModeEvidence  = "evidence"
)

// Result kinds (evidence mode).
const (
	KindTransient  = "transient"
	KindPersistent = "persistent"
)

// CollectiveMatch is the collective an evidence-mode result matched.
type CollectiveMatch struct {
	CommID string
	Op     string
	Seq    int64
	// CommRanks is the communicator's size (nccl.comm.nranks, else the
	// members with a marker of this collective).
	CommRanks int64
	// SynchronizedCommRanks is how many members show the change at their
	// own marker of this collective.
	SynchronizedCommRanks int64
	// Members holds, per member rank with a marker of this collective, that
	// marker's interval on the member's clock and whether the member showed
	// the change; the processor links the result span to these markers.
	// Not serialised.
	Members []MemberMarker
}

// MemberMarker is one member rank's marker of a matched collective.
type MemberMarker struct {
	Rank         int64
	StartNs      int64
	EndNs        int64
	Synchronized bool
}

// EndNs is IntervalEndNs for callers that keep times as int64, saturated
// at the largest int64: no event time lies past that.
func (r *Result) EndNs() int64 {
	return int64(min(r.IntervalEndNs, math.MaxInt64))
}

// PhaseResolver resolves a spike's timestamp to a phase (R2 phase_resolver).
type PhaseResolver interface {
	Resolve(timestampNs int64, sessionID string, rank int64) *phase.Attribution
}
