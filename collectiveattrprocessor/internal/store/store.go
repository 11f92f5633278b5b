// Package store holds the processor's jobs: per job, its window (package
// window: the ranks' columns inside the event-time window, their trimming,
// duplicates, snapshots and checkpoint codec) beside the job's lifecycle
// (when it last received data, whether it is due, saved, finalised), the
// job and rank limits, and what each job emitted. The processor adds what
// the converter read, sweeps the jobs on each evaluation tick, hands a
// job's window to the mode's engine and claims the results it emits.
//
// A Store is not safe for concurrent use: its owner serialises every call
// (a detached Job, returned by Sweep, belongs to its caller alone). It never
// keeps a pointer into its callers' data: records' strings are kept by
// value and phase paths are read-only shares.
package store

import (
	"cmp"
	"slices"
	"time"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/window"
)

// Config bounds a Store.
type Config struct {
	MaxJobs          int
	MaxRanksPerJob   int
	MaxEventsPerRank int
	// Window is how much event time each rank keeps, counted back from its
	// job's newest event.
	Window time.Duration
	// Phases keeps phase boundaries and phase spans for the phase index;
	// without it a boundary is kept as any other record.
	Phases bool
	// Mode is what the attribution mode buffers beyond what every mode
	// keeps (window.Mode); nil is window.ReferenceMode.
	Mode window.Mode
	// EmittedMemoryTTL and MaxEmittedJobs bound the emitted memory
	// (emitted.go): how long after a forgotten job last received data, and
	// for how many jobs, what it emitted is remembered.
	EmittedMemoryTTL time.Duration
	MaxEmittedJobs   int
}

// Store is the processor's jobs.
type Store struct {
	cfg Config
	// win is what every job's window is held to; counts receives what
	// the windows refuse and drop.
	win    window.Config
	counts window.Counts
	jobs   map[string]*Job
	ranks  int
	tally  Tally
	// emitted is what each job emitted, by job id; it outlives the jobs.
	emitted map[string]*EmittedJob
	// spanRec is the marker span of a run being added as a record.
	spanRec ingest.Record
	// last caches the (job, rank) of the previous record: consecutive
	// records nearly always belong to the same rank. Reset whenever a job
	// leaves jobs.
	last lastRank
}

// Job is one job: its window and its lifecycle. Its methods are the
// store's: a Job is read and changed under whatever serialises the Store,
// or, once detached by Sweep, by its one holder.
type Job struct {
	*window.Job
	// lastSeen is the wall-clock time of the job's latest accepted record.
	lastSeen time.Time
	// dirty says the job received data since it was last swept.
	dirty bool
	// unsaved says the job changed (data, an emitted result) since its
	// last checkpoint.
	unsaved bool
	// final says the job was finalised before a restart and restored
	// because its results may not have reached the downstream: the next
	// Sweep finalises it again.
	final bool
}

type lastRank struct {
	job  *Job
	rank int64
	rb   *window.Rank
}

// The emitted memory's bounds when Config leaves them zero.
const (
	defaultEmittedMemoryTTL = time.Hour
	defaultMaxEmittedJobs   = 1000
)

// New returns an empty store.
func New(cfg Config) *Store {
	if cfg.EmittedMemoryTTL <= 0 {
		cfg.EmittedMemoryTTL = defaultEmittedMemoryTTL
	}
	if cfg.MaxEmittedJobs <= 0 {
		cfg.MaxEmittedJobs = defaultMaxEmittedJobs
	}
	if cfg.Mode == nil {
		cfg.Mode = window.ReferenceMode
	}
	return &Store{
		cfg:     cfg,
		win:     window.Config{MaxEventsPerRank: cfg.MaxEventsPerRank, Window: cfg.Window, Phases: cfg.Phases, Mode: cfg.Mode},
		jobs:    map[string]*Job{},
		emitted: map[string]*EmittedJob{},
	}
}

// Take returns what the store did since the last Take, and starts counting
// anew.
func (s *Store) Take() Tally {
	t := s.tally
	t.rejected[rejectStale] += s.counts.Stale
	t.rejected[rejectDuplicate] += s.counts.Duplicate
	for b := range NumBounds {
		t.Evicted[b] += s.counts.Evicted[b]
	}
	s.tally, s.counts = Tally{}, window.Counts{}
	return t
}

// Sizes are the tracked jobs and ranks and the buffered entries.
func (s *Store) Sizes() (jobs, ranks, events int) {
	for _, job := range s.jobs {
		events += job.Events()
	}
	return len(s.jobs), s.ranks, events
}

// AdmitsJob reports whether data of job id may be buffered: the job is
// tracked, or there is room for one more under MaxJobs. The converter asks
// it before keeping anything of an item.
func (s *Store) AdmitsJob(id string) bool {
	if j := s.last.job; j != nil && j.ID() == id {
		return true
	}
	return len(s.jobs) < s.cfg.MaxJobs || s.jobs[id] != nil
}

// Job returns a tracked job, nil when it is not tracked.
func (s *Store) Job(id string) *Job { return s.jobs[id] }

// reject counts an item refused with err.
func (s *Store) reject(r rejection) { s.tally.rejected[r]++ }

// AddRecord buffers one converted record under its job and rank, enforcing
// the job and rank limits, and hands it to the job's window (which refuses
// it when stale or a duplicate); now is the wall clock of its batch. It
// reports whether the record reached its rank: false when it was refused
// (the Tally counts why). A marker record reaches its rank when any of its
// times is inside the window.
func (s *Store) AddRecord(rec *ingest.Record, now time.Time) bool {
	ts := rec.TimestampNs
	switch rec.Kind {
	case ingest.KindPhaseSpan:
		ts = rec.PhaseSpan.EndNs
	case ingest.KindMarker:
		// A span is stale only when all its markers are; the window skips
		// the stale ones of a span that is not.
		if len(rec.MarkerTimesNs) == 0 {
			return false
		}
		ts = slices.Max(rec.MarkerTimesNs)
	}
	job, rb := s.rankOf(rec.JobID, rec.Rank, ts)
	if rb == nil || !s.claims(job, rb, rec.Rank, rec.Host, ts, 1) {
		return false
	}
	accepted, added := job.Add(rb, rec)
	if !accepted {
		return false
	}
	if added > 0 {
		s.tally.Buffered++
		s.noteRank(job, rb, rec.WorldSize, rec.Host, now)
	}
	return true
}

// AddMarkerRun buffers the marker spans of one (job, rank) as AddRecord
// would buffer each as a KindMarker Record. In a mode that buffers marker
// times, when the rank has room for all their markers and none is stale
// even against the run's newest time, they are pushed with the lookups and
// the per-rank bookkeeping done once.
func (s *Store) AddMarkerRun(run *ingest.MarkerRun, now time.Time) {
	if !s.cfg.Mode.BatchesMarkerSpans() {
		s.addRecords(run, 0, now)
		return
	}
	first, job, rb := s.firstRanked(run.JobID, run.Rank, len(run.Spans), func(i int) int64 { return slices.Max(run.Spans[i].TimesNs) })
	if rb == nil || !s.claims(job, rb, run.Rank, run.Host, slices.Max(run.Spans[first].TimesNs), len(run.Spans)-first) {
		return
	}
	dup, done := job.AddMarkerSpans(rb, run.Spans[first:])
	first += dup
	if !done {
		s.addRecords(run, first, now)
		return
	}
	if first == len(run.Spans) {
		return
	}
	s.tally.Buffered += int64(len(run.Spans) - first)
	s.noteRank(job, rb, run.WorldSize, run.Host, now)
}

// addRecords buffers the marker spans of run from the first one at a
// time, as records. The record is built in the store: AddRecord hands its
// record to the window, so a local would be allocated per span.
func (s *Store) addRecords(run *ingest.MarkerRun, first int, now time.Time) {
	for i := first; i < len(run.Spans); i++ {
		s.spanRec = run.Record(i)
		s.AddRecord(&s.spanRec, now)
	}
}

// AddSampleRun buffers the samples of one (job, rank) in time order, as
// AddRecord would buffer each as a KindSample Record, with the lookups and
// the per-rank bookkeeping done once per run. It returns the index of the
// first sample buffered: the ones before it were refused, every one from
// it on is buffered (len(run.Samples): none).
func (s *Store) AddSampleRun(run *ingest.SampleRun, now time.Time) int {
	first, job, rb := s.firstRanked(run.JobID, run.Rank, len(run.Samples), func(i int) int64 { return run.Samples[i].TimestampNs })
	if rb == nil {
		return first
	}
	if !s.claims(job, rb, run.Rank, run.Host, run.Samples[first].TimestampNs, len(run.Samples)-first) {
		return len(run.Samples)
	}
	samples := run.Samples[first:]
	// The session is the process that sent the allocator points, or the
	// job id when it named none: the session of its phase spans from
	// traces too, so that those spans resolve the phase of metrics-derived
	// spikes (docs/evidence-mode.md §7.1).
	dup := job.AddSamples(rb, cmp.Or(run.Session, run.JobID), len(samples), func(i int) (ts, gap, total int64) {
		p := &samples[i]
		if p.Has&ingest.HasDeviceTotal != 0 {
			total = p.DeviceTotal
		}
		return p.TimestampNs, attribution.HiddenGap(p.DeviceUsed, p.AllocatorReserved), total
	})
	if first += dup; first == len(run.Samples) {
		return first
	}
	s.tally.Buffered += int64(len(run.Samples) - first)
	s.noteRank(job, rb, run.WorldSize, run.Host, now)
	newest := &run.Samples[len(run.Samples)-1]
	rb.NoteHidden(newest.TimestampNs, newest.DeviceUsed, newest.AllocatorReserved)
	for i := len(run.Samples) - 1; i >= first; i-- {
		if run.Samples[i].Has&ingest.HasProcessUsed == 0 {
			rb.NoteDeviceWide(run.Samples[i].TimestampNs)
			break
		}
	}
	return first
}

// firstRanked returns the index of the first of n records of one job and
// rank (record i at time tsOf(i)) whose rank is found, and the job and rank;
// each record before it is refused, as rankOf refuses a record. rb is nil
// when none is found.
func (s *Store) firstRanked(jobID string, rank int64, n int, tsOf func(int) int64) (int, *Job, *window.Rank) {
	for i := range n {
		if job, rb := s.rankOf(jobID, rank, tsOf(i)); rb != nil {
			return i, job, rb
		}
	}
	return n, nil, nil
}

// rankOf returns the job and rank buffer of a record at ts, or nil rb when
// the record is refused (stale, or over a limit).
func (s *Store) rankOf(jobID string, rank, ts int64) (*Job, *window.Rank) {
	job, rb := s.last.job, s.last.rb
	if job == nil || job.ID() != jobID || s.last.rank != rank {
		if job, rb = s.lookup(jobID, rank, ts, job); rb == nil {
			return nil, nil
		}
		s.last = lastRank{job: job, rank: rank, rb: rb}
	} else if !job.Admits(rb, ts) {
		s.reject(rejectStale)
		return nil, nil
	}
	return job, rb
}

// lookup finds or creates the job and rank of a record, enforcing the job
// and rank limits and the window; rb is nil when the record is refused.
// hint is the job of the previous record (nil or a job still tracked):
// when it is the record's, the jobs map is not consulted.
func (s *Store) lookup(jobID string, rank, ts int64, hint *Job) (*Job, *window.Rank) {
	job := hint
	if job == nil || job.ID() != jobID {
		job = s.jobs[jobID]
	}
	if job == nil {
		if len(s.jobs) >= s.cfg.MaxJobs {
			s.reject(rejectJobLimit)
			return nil, nil
		}
		job = &Job{Job: window.NewJob(jobID, &s.win, &s.counts)}
		s.jobs[jobID] = job
	}
	rb := job.Rank(rank)
	if !job.Admits(rb, ts) {
		s.reject(rejectStale)
		s.forgetIfEmpty(job)
		return nil, nil
	}
	if rb == nil {
		if job.Ranks() >= s.cfg.MaxRanksPerJob {
			s.reject(rejectRankLimit)
			s.forgetIfEmpty(job)
			return nil, nil
		}
		rb = job.AddRank(rank)
		s.ranks++
	}
	return job, rb
}

// claims reports whether n items of rank (rb) from host, the first at event time
// ts, may join the rank (window.Rank.Claim); when another host holds it,
// they are refused and counted as a rank conflict.
func (s *Store) claims(job *Job, rb *window.Rank, rank int64, host string, ts int64, n int) bool {
	ok, holder := rb.Claim(host, ts)
	if !ok {
		s.tally.rejected[rejectConflict] += int64(n)
		s.tally.conflict = &RankConflictError{Job: job.ID(), Rank: rank, Holder: holder, Refused: host}
	}
	return ok
}

// forgetIfEmpty drops a job that was created for a record that was then
// refused, so that refused data leaves no state behind.
func (s *Store) forgetIfEmpty(job *Job) {
	if job.Ranks() == 0 {
		delete(s.jobs, job.ID())
		s.last = lastRank{}
	}
}

// noteRank records what records pushed to rb said of their rank, and that
// the job received data at now.
func (s *Store) noteRank(job *Job, rb *window.Rank, worldSize int64, host string, now time.Time) {
	rb.Note(worldSize, host)
	job.lastSeen = now
	job.dirty = true
	job.unsaved = true
}
