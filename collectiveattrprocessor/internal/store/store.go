// Package store holds the processor's buffered telemetry: per job, per rank,
// the samples, markers, other stormlog records, phase boundaries and phase
// spans inside the window, bounded by the configured limits, and what was
// emitted for each rank. The processor adds what the converter read, sweeps
// the jobs on each evaluation tick, snapshots a job for the attribution and
// claims the results it emits.
//
// A Store is not safe for concurrent use: its owner serialises every call
// (a detached Job, returned by Sweep, belongs to its caller alone). It never
// keeps a pointer into its callers' data: records' strings are kept by
// value and phase paths are read-only shares.
package store

import (
	"math"
	"slices"
	"time"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/telemetry"
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
	// Mode is what the attribution mode reads beyond what every mode
	// keeps (mode.go); nil is ReferenceMode.
	Mode Mode
	// EmittedMemoryTTL and MaxEmittedJobs bound the emitted memory
	// (emitted.go): how long after a forgotten job last received data, and
	// for how many jobs, what it emitted is remembered.
	EmittedMemoryTTL time.Duration
	MaxEmittedJobs   int
}

// Store is the per-job, per-rank buffer store.
type Store struct {
	cfg    Config
	jobs   map[string]*Job
	ranks  int
	events int
	tally  Tally
	// emitted is what each job emitted, by job id; it outlives the jobs.
	emitted map[string]*EmittedJob
	// read is the stormlog record being added as the mode read it;
	// spanRec the marker span of a run being added as a record.
	read    stormlogRead
	spanRec ingest.Record
	// last caches the (job, rank) of the previous record: consecutive
	// records nearly always belong to the same rank. Reset whenever a job
	// leaves jobs.
	last lastRank
}

type lastRank struct {
	job  *Job
	rank int64
	rb   *rankBuffer
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
		cfg.Mode = ReferenceMode
	}
	return &Store{cfg: cfg, jobs: map[string]*Job{}, emitted: map[string]*EmittedJob{}}
}

// Take returns what the store did since the last Take, and starts counting
// anew.
func (s *Store) Take() Tally {
	t := s.tally
	s.tally = Tally{}
	return t
}

// Sizes are the tracked jobs and ranks and the buffered entries.
func (s *Store) Sizes() (jobs, ranks, events int) { return len(s.jobs), s.ranks, s.events }

// AdmitsJob reports whether data of job id may be buffered: the job is
// tracked, or there is room for one more under MaxJobs. The converter asks
// it before keeping anything of an item.
func (s *Store) AdmitsJob(id string) bool {
	if j := s.last.job; j != nil && j.id == id {
		return true
	}
	return len(s.jobs) < s.cfg.MaxJobs || s.jobs[id] != nil
}

// Job returns a tracked job, nil when it is not tracked.
func (s *Store) Job(id string) *Job { return s.jobs[id] }

// reject counts an item refused with err.
func (s *Store) reject(r rejection) { s.tally.rejected[r]++ }

// AddRecord buffers one converted record under its job and rank, enforcing
// the job, rank, window and per-rank bounds; now is the wall clock of its
// batch. It reports whether the record reached its rank: false when it was
// refused (stale, or over a limit; the Tally counts why). A marker record
// reaches its rank when any of its times is inside the window.
func (s *Store) AddRecord(rec *ingest.Record, now time.Time) bool {
	ts := rec.TimestampNs
	switch rec.Kind {
	case ingest.KindPhaseSpan:
		ts = rec.PhaseSpan.EndNs
	case ingest.KindMarker:
		// A span is stale only when all its markers are; pushMarkers skips
		// the stale ones of a span that is not.
		if len(rec.MarkerTimesNs) == 0 {
			return false
		}
		ts = slices.Max(rec.MarkerTimesNs)
	}
	job, rb := s.rankOf(rec.JobID, rec.Rank, ts)
	if rb == nil {
		return false
	}
	// The read lives in the store: a local whose address goes to the
	// mode's methods would be allocated per record.
	read := &s.read
	*read = stormlogRead{}
	if rec.Kind == ingest.KindStormlog {
		*read = s.cfg.Mode.readStormlog(job, rec)
	}
	if s.duplicate(job, rb, rec, read) {
		s.reject(rejectDuplicate)
		return false
	}

	// The window moves before the push, so that making room on a full rank
	// drops what the record pushes out of the window first.
	job.advance(rb, ts)
	added := 0
	switch rec.Kind {
	case ingest.KindMarker:
		added += s.cfg.Mode.pushMarkerSpan(s, job, rb, rec)
	case ingest.KindAccounting:
		added += s.cfg.Mode.pushAccounting(s, job, rb, rec)
	case ingest.KindPhaseSpan:
		added += s.pushPhaseSpan(job, rb, rec)
	case ingest.KindStormlog:
		added += s.cfg.Mode.pushStormlog(s, job, rb, rec, read)
	}
	if added == 0 {
		return true
	}
	s.added(job, rb, added, ts)
	s.noteRank(job, rb, rec.WorldSize, rec.Host, now)
	return true
}

// AddMarkerRun buffers the marker spans of one (job, rank) as AddRecord
// would buffer each as a KindMarker Record. When the rank has room for all
// their markers and none is stale even against the run's newest time, they
// are pushed with the lookups and the per-rank bookkeeping done once.
func (s *Store) AddMarkerRun(run *ingest.MarkerRun, now time.Time) {
	s.cfg.Mode.addMarkerRun(s, run, now)
}

// addRecords buffers the marker spans of run from the first one at a
// time, as records. The record is built in the store: AddRecord hands its
// record to the mode's methods, so a local would be allocated per span.
func (s *Store) addRecords(run *ingest.MarkerRun, first int, now time.Time) {
	for i := first; i < len(run.Spans); i++ {
		s.spanRec = run.Record(i)
		s.AddRecord(&s.spanRec, now)
	}
}

// addMarkerTimes is AddMarkerRun of the reference mode's marker times.
func (s *Store) addMarkerTimes(run *ingest.MarkerRun, now time.Time) {
	first, job, rb := s.firstRanked(run.JobID, run.Rank, len(run.Spans), func(i int) int64 { return slices.Max(run.Spans[i].TimesNs) })
	if rb == nil {
		return
	}
	if dup := duplicateSpans(rb, run.Spans[first:]); dup > 0 {
		s.tally.rejected[rejectDuplicate] += int64(dup)
		if first += dup; first == len(run.Spans) {
			return
		}
	}
	spans := run.Spans[first:]
	markers, oldest, newest := 0, int64(math.MaxInt64), job.newestNs
	for i := range spans {
		times := spans[i].TimesNs
		markers += len(times)
		oldest, newest = min(oldest, slices.Min(times)), max(newest, slices.Max(times))
	}
	maxCap := s.cfg.MaxEventsPerRank
	if rb.len()+markers > maxCap || oldest < cutoffAt(newest, s.cfg.Window) {
		s.addRecords(run, first, now)
		return
	}
	session := rb.sessionIndex("")
	for i := range spans {
		meta := markerMeta{session: session, ref: rb.markers.refCode(spans[i].Ref, maxCap)}
		for _, ts := range spans[i].TimesNs {
			rb.markers.push(ts, meta, maxCap)
		}
	}
	s.addedRun(job, rb, len(spans), markers, oldest, newest)
	s.noteRank(job, rb, run.WorldSize, run.Host, now)
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
	if dup := duplicateSamples(rb, run.Samples[first:], run.JobID); dup > 0 {
		s.tally.rejected[rejectDuplicate] += int64(dup)
		if first += dup; first == len(run.Samples) {
			return first
		}
	}
	samples := run.Samples[first:]
	// Metrics carry no stormlog session: the job id stands in, which is also
	// the session of phase spans from traces, so that those spans resolve
	// the phase of metrics-derived spikes.
	session := rb.sessionIndex(run.JobID)
	maxCap := s.cfg.MaxEventsPerRank
	if rb.len()+len(samples) > maxCap {
		// Each sample makes room for itself, as a record of its own would.
		// (None is stale: they are in time order, and the first was not.)
		for i := range samples {
			p := &samples[i]
			job.advance(rb, p.TimestampNs)
			s.makeRoom(job, rb)
			pushSamplePoint(rb, p, session, maxCap)
			s.added(job, rb, 1, p.TimestampNs)
		}
		s.noteRank(job, rb, run.WorldSize, run.Host, now)
		return first
	}
	// The common case: the rank has room for the run, and the samples are
	// in time order, so none is stale once the first is not.
	for i := range samples {
		pushSamplePoint(rb, &samples[i], session, maxCap)
	}
	s.addedRun(job, rb, len(samples), len(samples), samples[0].TimestampNs, samples[len(samples)-1].TimestampNs)
	s.noteRank(job, rb, run.WorldSize, run.Host, now)
	return first
}

// pushSamplePoint buffers the sample of a metrics sample point.
func pushSamplePoint(rb *rankBuffer, p *ingest.SamplePoint, session uint32, maxCap int) {
	total := int64(0)
	if p.Has&ingest.HasDeviceTotal != 0 {
		total = p.DeviceTotal
	}
	rb.samples.push(p.TimestampNs, attribution.HiddenGap(p.DeviceUsed, p.AllocatorReserved), total, session, maxCap)
}

// firstRanked returns the index of the first of n records of one job and
// rank (record i at time tsOf(i)) whose rank is found, and the job and rank;
// each record before it is refused, as rankOf refuses a record. rb is nil
// when none is found.
func (s *Store) firstRanked(jobID string, rank int64, n int, tsOf func(int) int64) (int, *Job, *rankBuffer) {
	for i := range n {
		if job, rb := s.rankOf(jobID, rank, tsOf(i)); rb != nil {
			return i, job, rb
		}
	}
	return n, nil, nil
}

// addedRun accounts for a run of records (entries pushed to rb, their
// times from oldestNs to newestNs) pushed at once: the job's newest time
// moves before the lazy trim, as it does per record.
func (s *Store) addedRun(job *Job, rb *rankBuffer, records, entries int, oldestNs, newestNs int64) {
	job.advance(rb, newestNs)
	s.events += entries
	job.events += entries
	s.tally.Buffered += int64(records)
	rb.frontNs = min(rb.frontNs, oldestNs)
	s.trimLazily(job, rb)
}

// added accounts for n entries of one record at ts pushed to rb.
func (s *Store) added(job *Job, rb *rankBuffer, n int, ts int64) {
	s.events += n
	job.events += n
	s.tally.Buffered++
	rb.frontNs = min(rb.frontNs, ts)
	s.trimLazily(job, rb)
}

// rankOf returns the job and rank buffer of a record at ts, or nil rb when
// the record is refused (stale, or over a limit).
func (s *Store) rankOf(jobID string, rank, ts int64) (*Job, *rankBuffer) {
	job, rb := s.last.job, s.last.rb
	if job == nil || job.id != jobID || s.last.rank != rank {
		if job, rb = s.lookup(jobID, rank, ts, job); rb == nil {
			return nil, nil
		}
		s.last = lastRank{job: job, rank: rank, rb: rb}
	} else if ts < job.cutoffNs(s.cfg.Window) {
		s.reject(rejectStale)
		return nil, nil
	}
	return job, rb
}

// lookup finds or creates the job and rank of a record, enforcing the job
// and rank limits and the window; rb is nil when the record is refused.
// hint is the job of the previous record (nil or a job still tracked):
// when it is the record's, the jobs map is not consulted.
func (s *Store) lookup(jobID string, rank, ts int64, hint *Job) (*Job, *rankBuffer) {
	job := hint
	if job == nil || job.id != jobID {
		job = s.jobs[jobID]
	}
	if job == nil {
		if len(s.jobs) >= s.cfg.MaxJobs {
			s.reject(rejectJobLimit)
			return nil, nil
		}
		job = &Job{id: jobID, ranks: map[int64]*rankBuffer{}, newestNs: math.MinInt64, wm: newWatermark()}
		s.jobs[jobID] = job
	}
	rb := job.rank(rank)
	// A new rank is judged against the job's event time only once two
	// ranks make it: while one rank does, that rank's clock alone would
	// refuse every other rank (watermark.go).
	if ts < job.cutoffNs(s.cfg.Window) && (rb != nil || job.wm.ranksWithTime >= 2) {
		s.reject(rejectStale)
		s.forgetIfEmpty(job)
		return nil, nil
	}
	if rb == nil {
		if len(job.ranks) >= s.cfg.MaxRanksPerJob {
			s.reject(rejectRankLimit)
			s.forgetIfEmpty(job)
			return nil, nil
		}
		rb = &rankBuffer{newestNs: math.MinInt64}
		job.addRank(rank, rb)
		s.ranks++
	}
	return job, rb
}

// forgetIfEmpty drops a job that was created for a record that was then
// refused, so that refused data leaves no state behind.
func (s *Store) forgetIfEmpty(job *Job) {
	if len(job.ranks) == 0 {
		delete(s.jobs, job.id)
		s.last = lastRank{}
	}
}

// trimLazily trims the rank written to once its oldest entry is trimSlack
// behind the window, so that a trim drops a run of entries rather than one
// per record; Sweep trims every rank exactly.
func (s *Store) trimLazily(job *Job, rb *rankBuffer) {
	if rb.frontNs < job.lazyCutoffNs(s.cfg.Window) {
		s.evicted(job, BoundWindow, rb.trim(job.cutoffNs(s.cfg.Window)))
	}
}

// noteRank records what records pushed to rb said of their rank, and that
// the job received data at now.
func (s *Store) noteRank(job *Job, rb *rankBuffer, worldSize int64, host string, now time.Time) {
	if worldSize > rb.worldSize {
		rb.worldSize = worldSize
	}
	if host != "" && host != rb.host {
		rb.host = host
	}
	job.lastSeen = now
	job.dirty = true
	job.unsaved = true
}

func (s *Store) evicted(job *Job, b Bound, n int) {
	if n == 0 {
		return
	}
	s.tally.Evicted[b] += int64(n)
	s.events -= n
	job.events -= n
}

// makeRoom evicts the rank's oldest entry when it is at max_events_per_rank.
// Entries past the window go first, as what they are: the trim on push is
// lazy, so a full rank may still hold some.
func (s *Store) makeRoom(job *Job, rb *rankBuffer) {
	if rb.len() < s.cfg.MaxEventsPerRank {
		return
	}
	s.evicted(job, BoundWindow, rb.trim(job.cutoffNs(s.cfg.Window)))
	if rb.len() >= s.cfg.MaxEventsPerRank {
		rb.evictOldest()
		s.evicted(job, BoundMaxEventsPerRank, 1)
	}
}

// pushMarkers buffers the marker times of one marker span; a time before
// the window is refused as stale, as a record would be. When the rank has
// room for them all and none is stale, the span is stored once and its
// markers are written straight into the columns.
func (s *Store) pushMarkers(job *Job, rb *rankBuffer, rec *ingest.Record) int {
	times := rec.MarkerTimesNs
	maxCap := s.cfg.MaxEventsPerRank
	cutoff := job.cutoffNs(s.cfg.Window)
	oldest := slices.Min(times)
	meta := markerMeta{session: rb.sessionIndex("")}
	if rb.len()+len(times) <= maxCap && oldest >= cutoff {
		meta.ref = rb.markers.refCode(rec.Marker, maxCap)
		for _, ts := range times {
			rb.markers.push(ts, meta, maxCap)
		}
		rb.frontNs = min(rb.frontNs, oldest)
		return len(times)
	}
	n := 0
	for _, ts := range times {
		if ts < cutoff {
			s.reject(rejectStale)
			continue
		}
		// Making room may evict the span's own earlier markers and with
		// them its table entry, so the entry is looked up per marker.
		s.makeRoom(job, rb)
		rb.markers.pushRef(ts, rec.Marker, meta.session, maxCap)
		rb.frontNs = min(rb.frontNs, ts)
		n++
	}
	return n
}

func (s *Store) pushPhaseSpan(job *Job, rb *rankBuffer, rec *ingest.Record) int {
	s.makeRoom(job, rb)
	e := phaseSpanEntryOf(rec)
	if e.ParentID != noParent {
		rb.phaseWaiting++
	}
	rb.phaseSpans.push(e, s.cfg.MaxEventsPerRank)
	return 1
}

// pushStormlog buffers a stormlog record the way the reference reads it
// (rec.Stormlog says which): a usable sample feeds the samples
// (reference-semantics §2.3 S3), a record whose text matches a collective
// token is a marker (S2), phase boundaries feed the phase index (§3.2)
// when phases are on, and every record counts for the trace start (S6).
func (s *Store) pushStormlog(job *Job, rb *rankBuffer, rec *ingest.Record) int {
	e := &rec.Event
	maxCap := s.cfg.MaxEventsPerRank
	n := 0
	if rec.Stormlog&ingest.StormlogSample != 0 {
		s.pushStormlogSample(job, rb, e)
		n++
	}
	if rec.Stormlog&ingest.StormlogMarker != 0 {
		s.makeRoom(job, rb)
		rb.markers.pushRef(e.TimestampNs, ingest.SpanRef{}, rb.sessionIndex(e.SessionID), maxCap)
		n++
	}
	return s.pushBoundaryOrOther(job, rb, rec, n)
}

// pushStormlogSample buffers the sample a stormlog sample record e gives.
func (s *Store) pushStormlogSample(job *Job, rb *rankBuffer, e *telemetry.Event) {
	s.makeRoom(job, rb)
	total := int64(0)
	if e.DeviceTotalBytes.Valid {
		total = e.DeviceTotalBytes.Value
	}
	rb.samples.push(e.TimestampNs, attribution.HiddenGap(e.DeviceUsedBytes.Value, e.AllocatorReservedBytes.Value), total, rb.sessionIndex(e.SessionID), s.cfg.MaxEventsPerRank)
}

// pushBoundaryOrOther buffers what is left of a stormlog record of which
// n entries were buffered as samples, markers or accounting: its phase
// boundary, and, when nothing else kept it, an entry that counts for the
// trace start. Without phases a boundary counts only for the trace start
// (S6), as any other record: it is kept as one.
func (s *Store) pushBoundaryOrOther(job *Job, rb *rankBuffer, rec *ingest.Record, n int) int {
	e := &rec.Event
	maxCap := s.cfg.MaxEventsPerRank
	if s.cfg.Phases && rec.Stormlog&ingest.StormlogBoundary != 0 {
		s.makeRoom(job, rb)
		rb.boundaries.push(*e, maxCap)
		n++
	}
	if n == 0 {
		s.makeRoom(job, rb)
		rb.others.push(otherEntry{TimestampNs: e.TimestampNs, session: rb.sessionIndex(e.SessionID)}, maxCap)
		n++
	}
	return n
}
