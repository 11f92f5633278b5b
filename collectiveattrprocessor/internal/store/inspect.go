package store

import (
	"time"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/evidence"
)

// JobView is what a job holds, for tests and diagnostics.
type JobView struct {
	Ranks    int
	Events   int
	NewestNs int64
}

// InspectJob returns what job id holds; false when it is not tracked.
func (s *Store) InspectJob(id string) (JobView, bool) {
	job := s.jobs[id]
	if job == nil {
		return JobView{}, false
	}
	return JobView{Ranks: len(job.ranks), Events: job.events, NewestNs: job.newestNs}, true
}

// RankView is what a rank holds, in arrival order, for tests and
// diagnostics.
type RankView struct {
	SampleTimesNs []int64
	// SampleCapacity is how many samples the storage has room for.
	SampleCapacity int
	Markers        []MarkerView
	// EvidenceMarkers are evidence mode's markers.
	EvidenceMarkers []EvidenceMarkerView
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
	Ref         ingest.SpanRef
	HasRef      bool
}

// EvidenceMarkerView is a buffered evidence-mode marker: its interval, its
// collective (nil: a bare marker) and its span (HasRef false: none).
type EvidenceMarkerView struct {
	StartNs, EndNs int64
	Approximate    bool
	Collective     *evidence.Collective
	Ref            ingest.SpanRef
	HasRef         bool
}

// PhaseSpanView is a buffered phase span.
type PhaseSpanView struct {
	TraceID [16]byte
	ScopeID string
	Path    []string
}

// InspectRank returns what (job, rank) holds; false when it is not tracked.
func (s *Store) InspectRank(id string, rank int64) (RankView, bool) {
	job := s.jobs[id]
	if job == nil || job.ranks[rank] == nil {
		return RankView{}, false
	}
	rb := job.ranks[rank]
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

// EachRank calls f with every rank of job id and what it holds.
func (s *Store) EachRank(id string, f func(rank int64, v RankView)) {
	job := s.jobs[id]
	if job == nil {
		return
	}
	for r := range job.ranks {
		v, _ := s.InspectRank(id, r)
		f(r, v)
	}
}

// Touch marks job id as having new data (benchmarks drive evaluation
// rounds with it).
func (s *Store) Touch(id string, now time.Time) {
	if job := s.jobs[id]; job != nil {
		job.dirty = true
		job.lastSeen = now
	}
}

// EachJob calls f with the id of every tracked job.
func (s *Store) EachJob(f func(id string)) {
	for id := range s.jobs {
		f(id)
	}
}
