package window

import "github.com/collectiveattr/collectiveattr/evidence"

// RankView is what a rank holds, in arrival order, for tests and
// diagnostics.
type RankView struct {
	SampleTimesNs []int64
	// SampleCapacity is how many samples the storage has room for.
	SampleCapacity int
	Markers        []MarkerView
	// EvidenceMarkers are evidence mode's markers; EvidenceSpans the
	// entries of their span table.
	EvidenceMarkers []EvidenceMarkerView
	EvidenceSpans   int
	Others          int
	Boundaries      int
	PhaseSpans      []PhaseSpanView
	// PhaseWaiting is how many phase spans the rank counts as waiting for
	// a parent.
	PhaseWaiting int
	Len          int
}

// MarkerView is a buffered marker and its span (HasRef false: none).
type MarkerView struct {
	TimestampNs int64
	Ref         SpanRef
	HasRef      bool
}

// EvidenceMarkerView is a buffered evidence-mode marker: its interval, its
// collective (nil: a bare marker) and its span (HasRef false: none).
type EvidenceMarkerView struct {
	StartNs, EndNs int64
	Approximate    bool
	Collective     *evidence.Collective
	Ref            SpanRef
	HasRef         bool
}

// PhaseSpanView is a buffered phase span.
type PhaseSpanView struct {
	TraceID [16]byte
	ScopeID string
	Path    []string
}

// InspectRank returns what rank holds; false when it is not tracked.
func (job *Job) InspectRank(rank int64) (RankView, bool) {
	rb := job.ranks[rank]
	if rb == nil {
		return RankView{}, false
	}
	v := RankView{
		SampleCapacity: len(rb.samples.ts),
		Others:         rb.others.len(),
		Boundaries:     rb.boundaries.len(),
		PhaseWaiting:   rb.phaseWaiting,
		Len:            rb.len(),
	}
	for i := range rb.samples.len() {
		v.SampleTimesNs = append(v.SampleTimesNs, rb.samples.at(i))
	}
	for i := range rb.markers.len() {
		ref, ok := rb.markers.ref(i)
		v.Markers = append(v.Markers, MarkerView{TimestampNs: rb.markers.at(i), Ref: ref, HasRef: ok})
	}
	if e := rb.ev; e != nil {
		v.EvidenceSpans = e.spans.len()
		for i := range e.markers.len() {
			m := e.markers.auxAt(i)
			mv := EvidenceMarkerView{StartNs: e.markers.at(i), EndNs: m.endNs, Approximate: m.approximate()}
			if m.collective != evidence.NoCollective {
				c := job.collectives.List[m.collective]
				mv.Collective = &c
			}
			mv.Ref, mv.HasRef = e.spanOf(m)
			v.EvidenceMarkers = append(v.EvidenceMarkers, mv)
		}
	}
	for i := range rb.phaseSpans.len() {
		e := rb.phaseSpans.at(i)
		v.PhaseSpans = append(v.PhaseSpans, PhaseSpanView{TraceID: e.TraceID, ScopeID: e.ScopeID, Path: e.Path})
	}
	return v, true
}

// EachRank calls f with every rank and what it holds.
func (job *Job) EachRank(f func(rank int64, v RankView)) {
	for r := range job.ranks {
		v, _ := job.InspectRank(r)
		f(r, v)
	}
}
