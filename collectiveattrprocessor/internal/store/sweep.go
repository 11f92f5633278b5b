package store

import (
	"slices"
	"strings"
	"time"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
)

// Due is a job Sweep chose for evaluation. Detached is set for a job that
// was finalised: it has left the store and belongs to the caller. A live
// job is found again with Store.Job.
type Due struct {
	ID       string
	Detached *Job
}

// Sweep trims every rank to the window and chooses the jobs to evaluate,
// in job id order: with final, every job, detached; otherwise the jobs
// idle (no record accepted) for idleTimeout or marked final (MarkFinal),
// detached, and, with
// evaluateDirty, the live jobs that received data since the last sweep.
func (s *Store) Sweep(now time.Time, idleTimeout time.Duration, final, evaluateDirty bool) []Due {
	var due []Due
	for id, job := range s.jobs {
		cutoff := job.cutoffNs(s.cfg.Window)
		for _, rb := range job.ranks {
			s.evicted(job, BoundWindow, rb.trim(cutoff))
		}
		switch {
		case final || job.final || now.Sub(job.lastSeen) >= idleTimeout:
			s.detach(job)
			due = append(due, Due{ID: id, Detached: job})
		case job.dirty && evaluateDirty:
			due = append(due, Due{ID: id})
		}
		job.dirty = false
	}
	s.expireEmitted(now)
	slices.SortFunc(due, func(a, b Due) int { return strings.Compare(a.ID, b.ID) })
	return due
}

// MarkFinal has the next Sweep finalise job id, as if it were idle.
func (s *Store) MarkFinal(id string) {
	if job := s.jobs[id]; job != nil {
		job.final = true
	}
}

// Forget drops a job and everything buffered for it.
func (s *Store) Forget(id string) {
	if job := s.jobs[id]; job != nil {
		s.detach(job)
	}
}

func (s *Store) detach(job *Job) {
	delete(s.jobs, job.id)
	s.last = lastRank{}
	s.ranks -= len(job.ranks)
	s.events -= job.events
}

// PhaseSpansWaiting sums the phase spans the ranks count as waiting for a
// parent: those their latest snapshot left waiting, and those that arrived
// waiting since. A walk over the ranks, not their entries.
func (s *Store) PhaseSpansWaiting() int {
	n := 0
	for _, job := range s.jobs {
		for _, rb := range job.ranks {
			n += rb.phaseWaiting
		}
	}
	return n
}

// Claim decides whether result r of job is emitted now, and if so records
// it as emitted and returns the host of its rank and the distinct marker
// spans whose start, end or span event gave one of its marker times.
//
// The identity of an emitted interval is (job, rank, its time range): once a
// rank has emitted an interval ending at E, a later result of that rank that
// starts at or before E is the same interval, grown or re-scored by newer
// data (the reference merges touching intervals the same way), or replayed
// after the job was forgotten, and is never emitted again (the emitted
// memory outlives the job: emitted.go). An evidence-mode persistent step
// has an identity of its own: it may begin inside a transient spike already
// emitted (the collective whose first use connects NCCL's buffers spikes
// too), and is a different result, not that spike grown. A result is
// emitted when it has settled (the job's newest event time is more than
// settleDelay past its end) or when its job is finalised.
func (s *Store) Claim(job *Job, r *attribution.Result, settleDelay time.Duration, finalise bool) (host string, links []ingest.SpanRef, ok bool) {
	rb := job.ranks[r.Rank]
	if rb == nil {
		return "", nil, false
	}
	persistent := r.Kind == attribution.KindPersistent
	if e := s.emitted[job.id]; e != nil {
		if end, ok := e.emittedEnd(r.Rank, persistent); ok && r.IntervalStartNs <= end {
			return "", nil, false
		}
	}
	if !finalise && (job.newestNs-int64(settleDelay) <= r.EndNs()) {
		return "", nil, false
	}
	s.remember(job, r.Rank, persistent, r.EndNs())
	job.unsaved = true
	if r.Mode == attribution.ModeEvidence {
		return rb.host, evidenceLinks(job, r), true
	}
	return rb.host, markerLinks(rb, r.MarkerTimesNs), true
}

// markerLinks returns the distinct marker spans whose start, end or span
// event gave one of the times (sorted).
func markerLinks(rb *rankBuffer, times []int64) []ingest.SpanRef {
	if len(times) == 0 {
		return nil
	}
	var links []ingest.SpanRef
	for i := range rb.markers.len() {
		ref, ok := rb.markers.ref(i)
		if !ok {
			continue
		}
		if _, ok := slices.BinarySearch(times, rb.markers.at(i)); !ok {
			continue
		}
		if !slices.Contains(links, ref) {
			links = append(links, ref)
		}
	}
	return links
}
