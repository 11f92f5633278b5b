package output

import (
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/phase"
)

// Attribute keys of contract §5.
const (
	AttrServiceName = "service.name"
	AttrJobID       = "training.job.id"
	AttrHostName    = "host.name"
	AttrRank        = "training.rank"
	AttrWorldSize   = "training.world_size"

	AttrClassification = "collective_attribution.classification"
	AttrConfidence     = "collective_attribution.confidence"
	AttrReasonCodes    = "collective_attribution.reason_codes"
	AttrPreset         = "collective_attribution.preset"

	AttrMarkerHits        = "collective_attribution.evidence.marker_hits"
	AttrSynchronizedRanks = "collective_attribution.evidence.synchronized_ranks"
	AttrExpectedWorldSize = "collective_attribution.evidence.expected_world_size"
	AttrPeakGapBytes      = "collective_attribution.evidence.peak_gap_bytes"
	AttrSynchronyRatio    = "collective_attribution.evidence.synchrony_ratio"
	AttrRobustZscore      = "collective_attribution.evidence.robust_zscore"
	AttrPeakGapRatio      = "collective_attribution.evidence.peak_gap_ratio"

	AttrPhaseResolution = "collective_attribution.phase.resolution"
	AttrPhasePath       = "collective_attribution.phase.path"
	AttrPhaseSource     = "collective_attribution.phase.source"
	AttrPhaseSummary    = "collective_attribution.phase.summary"
	AttrPhasePaths      = "collective_attribution.phase.paths"
)

// ResultName is the span name and log event name of a result.
const ResultName = "collective_attribution"

// putResource writes the result resource: service.name, the job, and the
// rank's host when known.
func putResource(m pcommon.Map, job, host string) {
	m.EnsureCapacity(3)
	m.PutStr(AttrServiceName, ServiceName)
	m.PutStr(AttrJobID, job)
	if host != "" {
		m.PutStr(AttrHostName, host)
	}
}

// putResultAttributes writes the contract §5.1 attributes of it. training.world_size
// is the evidence's expected world size: the world the result was judged in.
// The confidence is the reference's value, already rounded to 3 decimals.
// Phase attributes appear only for a phase attribution, each only when the
// attribution has it; the summary is the reference's display string
// (summarize_phase_attribution).
func putResultAttributes(m pcommon.Map, it *Item) {
	r := it.Result
	ev := &r.Evidence
	m.EnsureCapacity(resultAttributeCount(r))
	m.PutInt(AttrRank, r.Rank)
	m.PutInt(AttrWorldSize, ev.ExpectedWorldSize)
	m.PutStr(AttrClassification, r.Classification)
	m.PutDouble(AttrConfidence, r.Confidence)
	codes := m.PutEmptySlice(AttrReasonCodes)
	codes.EnsureCapacity(len(r.ReasonCodes))
	sorted := slices.IsSorted(r.ReasonCodes)
	for _, c := range r.ReasonCodes {
		codes.AppendEmpty().SetStr(c)
	}
	if !sorted {
		sortStrings(codes)
	}
	m.PutStr(AttrPreset, it.Preset)
	m.PutInt(AttrMarkerHits, ev.MarkerHits)
	m.PutInt(AttrSynchronizedRanks, ev.SynchronizedRanks)
	m.PutInt(AttrExpectedWorldSize, ev.ExpectedWorldSize)
	m.PutInt(AttrPeakGapBytes, ev.PeakGapBytes)
	m.PutDouble(AttrSynchronyRatio, ev.SynchronyRatio)
	m.PutDouble(AttrRobustZscore, ev.RobustZscore)
	if ev.PeakGapRatio != nil {
		m.PutDouble(AttrPeakGapRatio, *ev.PeakGapRatio)
	}
	if pa := r.PhaseAttribution; pa != nil {
		m.PutStr(AttrPhaseResolution, pa.Resolution)
		if pa.Path != nil {
			m.PutStr(AttrPhasePath, *pa.Path)
		}
		if pa.Source != nil {
			m.PutStr(AttrPhaseSource, *pa.Source)
		}
		if s := phase.Summarize(pa); s != nil {
			m.PutStr(AttrPhaseSummary, *s)
		}
		if len(pa.Paths) > 0 {
			paths := m.PutEmptySlice(AttrPhasePaths)
			paths.EnsureCapacity(len(pa.Paths))
			for _, p := range pa.Paths {
				paths.AppendEmpty().SetStr(p)
			}
		}
	}
	putEvidenceAttributes(m, r)
}

// resultAttributeCount is how many attributes putResultAttributes writes
// for r (one more when the phase summary is absent): the map is allocated
// once at its size, a few hundred bytes per result a world-wide spike
// emits thousands of.
func resultAttributeCount(r *attribution.Result) int {
	n := 12
	if r.Evidence.PeakGapRatio != nil {
		n++
	}
	if pa := r.PhaseAttribution; pa != nil {
		n += 2 // the resolution, the summary
		if pa.Path != nil {
			n++
		}
		if pa.Source != nil {
			n++
		}
		if len(pa.Paths) > 0 {
			n++
		}
	}
	return n + evidenceAttributeCount(r)
}

// sortStrings sorts a slice of string values byte-wise.
func sortStrings(s pcommon.Slice) {
	vals := make([]string, s.Len())
	for i := range vals {
		vals[i] = s.At(i).Str()
	}
	slices.Sort(vals)
	for i, v := range vals {
		s.At(i).SetStr(v)
	}
}

// resourceKey groups results by the resource they belong to.
type resourceKey struct{ job, host string }
