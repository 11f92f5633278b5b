package inspector

import (
	"errors"
	"fmt"
	"time"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Owner is the training rank a process serves, as the rank's own telemetry
// says: what a joined Inspector record takes its identity from.
type Owner struct {
	JobID     string
	SessionID string
	Rank      int64
	LocalRank int64
	WorldSize int64
	DeviceID  int64
	// SamplingIntervalMs is copied onto converted events.
	SamplingIntervalMs int64
}

// Job is the job the owner belongs to: its job id, else its session (the
// processor's rule for stormlog records).
func (o *Owner) Job() string {
	if o.JobID != "" {
		return o.JobID
	}
	return o.SessionID
}

// OwnerOf is the owner a stormlog record names.
func OwnerOf(e *telemetry.Event) Owner {
	return Owner{
		JobID: e.JobID, SessionID: e.SessionID, Rank: e.Rank, LocalRank: e.LocalRank,
		WorldSize: e.WorldSize, DeviceID: e.DeviceID, SamplingIntervalMs: e.SamplingIntervalMs,
	}
}

// Process names one process: the key an Inspector record is joined by.
type Process struct {
	Host string
	PID  int64
}

func (p Process) String() string { return fmt.Sprintf("%s pid %d", p.Host, p.PID) }

// ErrUnknownProcess: no live telemetry names the record's host and pid.
var ErrUnknownProcess = errors.New("no telemetry from this host and pid")

// AmbiguousError: more than one rank's live telemetry names the same host
// and pid (pid namespaces of containers on one host, or a pid reused while
// the former owner's mapping lives). The record is given to neither.
type AmbiguousError struct {
	Process Process
	Owners  []Owner
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%s is claimed by %d ranks (e.g. job %q rank %d and job %q rank %d)",
		e.Process, len(e.Owners), e.Owners[0].Job(), e.Owners[0].Rank, e.Owners[1].Job(), e.Owners[1].Rank)
}

// claim is one owner's statement that it runs as a process.
type claim struct {
	owner    Owner
	lastSeen time.Time
}

// Joiner maps (host, pid) to the (job, rank) whose own telemetry carries
// that host and pid. A mapping belongs to its owner: only the owner's own
// telemetry refreshes it (joining a record does not), and it expires when
// the owner has sent nothing for the TTL. A record is never given to a rank
// other than the one owner of its process: while two owners' mappings of
// one process live, the process is ambiguous and its records are refused.
// Time comes from the injected clock. A Joiner is not safe for concurrent
// use.
type Joiner struct {
	ttl   time.Duration
	now   func() time.Time
	max   int
	procs map[Process][]claim
	// version counts the changes to the mappings other than a claim's
	// last-seen time: a claim added, its owner changed, claims expired.
	version uint64
	// Full counts claims refused because the joiner held max processes.
	Full uint64
}

// Learned is what a Learn that stored a claim returns, for Current: when
// it was learned and the joiner's version after it. The zero value is
// never current.
type Learned struct {
	at      time.Time
	version uint64
	ok      bool
}

// Current reports whether a claim learned as l need not be learned again
// at now: nothing but last-seen times changed since, and l is less than
// a refresh interval (the TTL / RefreshFraction) old. Learning it again
// would only move its last-seen time by less than that interval, so an
// owner that skips a Learn while its statement is Current keeps its
// mapping alive between TTL − TTL/RefreshFraction and TTL after its last
// telemetry, and its mapping is otherwise what Learn would make it.
func (j *Joiner) Current(l Learned, now time.Time) bool {
	return l.ok && l.version == j.version && now.Sub(l.at) < j.ttl/RefreshFraction
}

// RefreshFraction is the part of the TTL by which a claim's last-seen
// time may lag behind its owner's telemetry when its owner learns it only
// when it is not Current (see Current).
const RefreshFraction = 8

// NewJoiner returns a Joiner whose mappings expire ttl after their owner's
// last telemetry, holding at most maxProcesses processes (≤ 0: no bound);
// now is its clock (nil: time.Now).
func NewJoiner(ttl time.Duration, maxProcesses int, now func() time.Time) *Joiner {
	if now == nil {
		now = time.Now
	}
	return &Joiner{ttl: ttl, now: now, max: maxProcesses, procs: make(map[Process][]claim)}
}

// Learn records that owner runs as (host, pid), from the owner's own
// telemetry. An empty host or a negative pid (stormlog's -1, unknown) says
// nothing. It returns when and in which version it stored the claim (the
// zero Learned when it stored none), for Current.
func (j *Joiner) Learn(host string, pid int64, owner Owner) Learned {
	if host == "" || pid < 0 {
		return Learned{}
	}
	now := j.now()
	key := Process{Host: host, PID: pid}
	claims, ok := j.procs[key]
	if !ok && j.max > 0 && len(j.procs) >= j.max {
		j.Full++
		return Learned{}
	}
	for i := range claims {
		if claims[i].owner.Job() == owner.Job() && claims[i].owner.Rank == owner.Rank {
			if claims[i].owner != owner {
				j.version++
			}
			claims[i] = claim{owner: owner, lastSeen: now}
			return Learned{at: now, version: j.version, ok: true}
		}
	}
	j.procs[key] = append(claims, claim{owner: owner, lastSeen: now})
	j.version++
	return Learned{at: now, version: j.version, ok: true}
}

// LearnEvent is Learn for a stormlog record, which carries host and pid.
func (j *Joiner) LearnEvent(e *telemetry.Event) {
	_ = j.Learn(e.Host, e.PID, OwnerOf(e))
}

// Join returns the owner of (host, pid): ErrUnknownProcess when no live
// mapping exists, an *AmbiguousError when more than one does.
func (j *Joiner) Join(host string, pid int64) (Owner, error) {
	key := Process{Host: host, PID: pid}
	claims := j.procs[key]
	now := j.now()
	var found *claim
	live := 0
	for i := range claims {
		if j.alive(&claims[i], now) {
			live++
			if found == nil {
				found = &claims[i]
			}
		}
	}
	switch live {
	case 0:
		return Owner{}, ErrUnknownProcess
	case 1:
		return found.owner, nil
	}
	amb := &AmbiguousError{Process: key}
	for i := range claims {
		if j.alive(&claims[i], now) {
			amb.Owners = append(amb.Owners, claims[i].owner)
		}
	}
	return Owner{}, amb
}

func (j *Joiner) alive(c *claim, now time.Time) bool {
	return now.Sub(c.lastSeen) <= j.ttl
}

// Expire drops the mappings whose owner has been silent for longer than the
// TTL and returns how many it dropped.
func (j *Joiner) Expire() int {
	now := j.now()
	dropped := 0
	for key, claims := range j.procs {
		kept := claims[:0]
		for _, c := range claims {
			if j.alive(&c, now) {
				kept = append(kept, c)
			} else {
				dropped++
			}
		}
		if len(kept) < len(claims) {
			j.version++
		}
		if len(kept) == 0 {
			delete(j.procs, key)
		} else {
			j.procs[key] = kept
		}
	}
	return dropped
}

// Processes is the number of processes with a mapping, live or not yet
// expired.
func (j *Joiner) Processes() int { return len(j.procs) }
