package store

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/collectiveattr/collectiveattr/window"
)

// A checkpoint is one job's buffered state as bytes, for a storage
// extension to keep across a restart: its window (window.Job's checkpoint
// codec: format, versions and sections in window/checkpoint.go and this
// package's README) and, as the window's owner section, what the job
// emitted.

// CheckpointVersion is the version of the checkpoints this build writes;
// it reads every version up to it.
const CheckpointVersion = window.CheckpointVersion

// ErrCheckpoint wraps every error restoring a checkpoint: corrupt bytes, a
// version this build does not read, or state the store's limits refuse.
var ErrCheckpoint = window.ErrCheckpoint

// Unsaved returns the jobs that changed (received data or emitted a
// result) since their last checkpoint, in id order.
func (s *Store) Unsaved() []*Job {
	var jobs []*Job
	for _, job := range s.jobs {
		if job.unsaved {
			jobs = append(jobs, job)
		}
	}
	slices.SortFunc(jobs, func(a, b *Job) int { return strings.Compare(a.ID(), b.ID()) })
	return jobs
}

// MarkUnsaved counts job id as changed since its last checkpoint, so that
// the next one writes it (after a checkpoint that failed to be stored).
func (s *Store) MarkUnsaved(id string) {
	if job := s.jobs[id]; job != nil {
		job.unsaved = true
	}
}

// AppendCheckpoint appends the checkpoint of job to dst and counts the job
// as saved.
func (s *Store) AppendCheckpoint(dst []byte, job *Job) []byte {
	var owner func(w *window.CheckpointWriter)
	if e := s.emitted[job.ID()]; e != nil {
		owner = func(w *window.CheckpointWriter) { encodeEmitted(w, e) }
	}
	job.unsaved = false
	return job.Job.AppendCheckpoint(dst, owner)
}

// encodeEmitted writes what the job emitted: when it last received data
// and, per (rank, persistent), the end of the latest emitted interval.
func encodeEmitted(w *window.CheckpointWriter, e *EmittedJob) {
	w.Varint(e.LastSeen.UnixNano())
	w.Uvarint(uint64(len(e.Ranks)))
	for _, r := range e.Ranks {
		w.Varint(r.Rank)
		w.Bool(r.Persistent)
		w.Varint(r.EndNs)
	}
}

func decodeEmitted(r *window.CheckpointReader) *EmittedJob {
	e := &EmittedJob{LastSeen: time.Unix(0, r.Varint())}
	n := r.Count(3)
	for range n {
		er := EmittedRank{Rank: r.Varint(), Persistent: r.Bool(), EndNs: r.Varint()}
		if len(e.Ranks) > 0 && e.Ranks[len(e.Ranks)-1].cmp(er.Rank, er.Persistent) >= 0 {
			r.Fail("emitted ranks out of order")
		}
		if r.Err() != nil {
			return nil
		}
		e.Ranks = append(e.Ranks, er)
	}
	return e
}

// Restore adds the job of a checkpoint to the store, as it was when the
// checkpoint was written, except that it counts as having received data at
// now: the collector was down since, so its idle timeout starts anew. The
// job counts as saved. A checkpoint that is corrupt, of a later version,
// of another mode, of a job already tracked, or beyond the store's limits
// is refused with an error wrapping ErrCheckpoint (the over-limit ones
// also wrap the LimitError), and nothing is added.
func (s *Store) Restore(data []byte, now time.Time) (*Job, error) {
	var emitted *EmittedJob
	wj, err := window.DecodeCheckpoint(data, &s.win, &s.counts, s.cfg.MaxRanksPerJob, ErrRankLimit,
		func(r *window.CheckpointReader) { emitted = decodeEmitted(r) })
	if err != nil {
		return nil, err
	}
	if s.jobs[wj.ID()] != nil {
		return nil, fmt.Errorf("%w: job %q is already tracked", ErrCheckpoint, wj.ID())
	}
	if len(s.jobs) >= s.cfg.MaxJobs {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, ErrJobLimit)
	}
	job := &Job{Job: wj, lastSeen: now, dirty: true}
	s.jobs[job.ID()] = job
	if emitted != nil {
		s.restoreEmitted(job, emitted)
	}
	s.ranks += job.Ranks()
	return job, nil
}

// restoreEmitted puts a checkpoint's emitted memory of job into the store
// as it was saved (LastSeen included), within limits.max_emitted_jobs; an
// entry the store already holds for the job is merged with it.
func (s *Store) restoreEmitted(job *Job, saved *EmittedJob) {
	e := s.emitted[job.ID()]
	if e == nil {
		if len(s.emitted) >= s.cfg.MaxEmittedJobs {
			s.forgetOldestEmitted()
		}
		s.emitted[job.ID()] = saved
		return
	}
	for _, r := range saved.Ranks {
		e.note(r.Rank, r.Persistent, r.EndNs)
	}
	if saved.LastSeen.After(e.LastSeen) {
		e.LastSeen = saved.LastSeen
	}
}
