package store

import (
	"slices"
	"time"
)

// The emitted memory: per job, for each rank that emitted a result, the
// end of the latest interval it emitted. It outlives the job's buffers:
// data replayed after a job went idle and was forgotten recreates the job,
// and its results, the same intervals, must not leave again. An entry is
// kept until EmittedMemoryTTL (wall clock) after its job last received
// data and the job is no longer tracked; at most MaxEmittedJobs entries
// are kept, the one whose job was seen longest ago giving way. Its bytes
// are bounded by MaxEmittedJobs × (limits.max_identity_bytes +
// limits.max_ranks_per_job × 16).
//
// Plain values only: a checkpoint of the store saves it as it is.

// EmittedJob is what a job emitted: for each rank that emitted, the end of
// its latest emitted interval, by rank (and, apart, of its latest
// evidence-mode persistent step); and when the job last received data
// (wall clock).
type EmittedJob struct {
	LastSeen time.Time
	Ranks    []EmittedRank // sorted by (Rank, Persistent)
}

// EmittedRank is the end (event time) of the latest interval a rank
// emitted; Persistent marks the entry of evidence-mode persistent steps.
type EmittedRank struct {
	Rank       int64
	Persistent bool
	EndNs      int64
}

func (r EmittedRank) cmp(rank int64, persistent bool) int {
	if c := cmpInt64(r.Rank, rank); c != 0 {
		return c
	}
	switch {
	case r.Persistent == persistent:
		return 0
	case persistent:
		return -1
	}
	return 1
}

// find is the index of (rank, persistent) in e.Ranks, or where it goes: a
// binary search with the comparison inlined, run once per claim.
func (e *EmittedJob) find(rank int64, persistent bool) (int, bool) {
	lo, hi := 0, len(e.Ranks)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if e.Ranks[h].cmp(rank, persistent) < 0 {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo, lo < len(e.Ranks) && e.Ranks[lo].cmp(rank, persistent) == 0
}

func (e *EmittedJob) note(rank int64, persistent bool, endNs int64) {
	i, ok := e.find(rank, persistent)
	e.noteAt(i, ok, rank, persistent, endNs)
}

// noteAt records the end of an interval of (rank, persistent) at i, where
// find put it (found: its entry is there).
func (e *EmittedJob) noteAt(i int, found bool, rank int64, persistent bool, endNs int64) {
	if found {
		e.Ranks[i].EndNs = max(e.Ranks[i].EndNs, endNs)
		return
	}
	e.Ranks = slices.Insert(e.Ranks, i, EmittedRank{Rank: rank, Persistent: persistent, EndNs: endNs})
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// newEmitted starts the memory of what job id emits; the entry of the job
// seen longest ago gives way past MaxEmittedJobs.
func (s *Store) newEmitted(id string) *EmittedJob {
	if len(s.emitted) >= s.cfg.MaxEmittedJobs {
		s.forgetOldestEmitted()
	}
	e := &EmittedJob{}
	s.emitted[id] = e
	return e
}

// forgetOldestEmitted drops the entry whose job was seen longest ago.
func (s *Store) forgetOldestEmitted() {
	oldest := ""
	var at time.Time
	for id, e := range s.emitted {
		if oldest == "" || e.LastSeen.Before(at) {
			oldest, at = id, e.LastSeen
		}
	}
	delete(s.emitted, oldest)
}

// expireEmitted drops the entries of jobs no longer tracked whose data
// last came EmittedMemoryTTL or more before now.
func (s *Store) expireEmitted(now time.Time) {
	for id, e := range s.emitted {
		if s.jobs[id] == nil && now.Sub(e.LastSeen) >= s.cfg.EmittedMemoryTTL {
			delete(s.emitted, id)
		}
	}
}

// Emitted returns what job id emitted (nil: nothing remembered), for
// checkpoints and tests; the store keeps it.
func (s *Store) Emitted(id string) *EmittedJob { return s.emitted[id] }
