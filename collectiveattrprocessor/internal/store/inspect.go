package store

import (
	"time"

	"github.com/collectiveattr/collectiveattr/window"
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
	return JobView{Ranks: job.Ranks(), Events: job.Events(), NewestNs: job.NewestNs()}, true
}

// The views of a rank's buffers (window.RankView).
type (
	RankView           = window.RankView
	MarkerView         = window.MarkerView
	EvidenceMarkerView = window.EvidenceMarkerView
	PhaseSpanView      = window.PhaseSpanView
)

// InspectRank returns what (job, rank) holds; false when it is not tracked.
func (s *Store) InspectRank(id string, rank int64) (RankView, bool) {
	job := s.jobs[id]
	if job == nil {
		return RankView{}, false
	}
	return job.InspectRank(rank)
}

// EachRank calls f with every rank of job id and what it holds.
func (s *Store) EachRank(id string, f func(rank int64, v RankView)) {
	if job := s.jobs[id]; job != nil {
		job.EachRank(f)
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
