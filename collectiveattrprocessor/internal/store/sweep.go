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
		job.Trim()
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
	delete(s.jobs, job.ID())
	s.last = lastRank{}
	s.ranks -= job.Ranks()
}

// PhaseSpansWaiting sums the phase spans the ranks count as waiting for a
// parent: those their latest snapshot left waiting, and those that arrived
// waiting since. A walk over the ranks, not their entries.
func (s *Store) PhaseSpansWaiting() int {
	n := 0
	for _, job := range s.jobs {
		n += job.PhaseSpansWaiting()
	}
	return n
}

// Claim decides whether result r of job is emitted now, and if so records
// it as emitted and returns the host of its rank and links with the
// distinct marker spans whose start, end or span event gave one of its
// marker times appended (window.Job.AppendLinks); links unchanged
// otherwise.
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
func (s *Store) Claim(job *Job, r *attribution.Result, settleDelay time.Duration, finalise bool, links []ingest.SpanRef) (host string, withLinks []ingest.SpanRef, ok bool) {
	if job.Rank(r.Rank) == nil {
		return "", links, false
	}
	persistent := r.Kind == attribution.KindPersistent
	e := s.emitted[job.ID()]
	at, seen := 0, false
	if e != nil {
		if at, seen = e.find(r.Rank, persistent); seen && r.IntervalStartNs <= e.Ranks[at].EndNs {
			return "", links, false
		}
	}
	if !finalise && (job.NewestNs()-int64(settleDelay) <= r.EndNs()) {
		return "", links, false
	}
	if e == nil {
		e = s.newEmitted(job.ID())
	}
	if job.lastSeen.After(e.LastSeen) {
		e.LastSeen = job.lastSeen
	}
	e.noteAt(at, seen, r.Rank, persistent, r.EndNs())
	job.unsaved = true
	return job.Host(r.Rank), job.AppendLinks(links, r), true
}

// MemberSpans returns, for each member of collective c, the span of its
// marker of c (window.Job.MemberSpans).
func (s *Store) MemberSpans(job *Job, c *attribution.CollectiveMatch) []ingest.SpanRef {
	return job.Job.MemberSpans(c)
}
