package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// maxHiddenPointsPerTick bounds the gpu.memory.hidden points kept between
// two evaluation ticks. Past it, further points of that interval are not
// reported (the buffered samples themselves are unaffected).
const maxHiddenPointsPerTick = 1 << 16

// core is the state shared by the traces, metrics and logs processors of one
// component ID: the converter, the per-job buffers, the evaluation loop and
// the result sinks.
//
// Locking: mu guards the converter and the buffers and is held only while
// converting a batch or copying a job out for evaluation, so Consume calls
// never wait for an evaluation. evalMu serialises evaluation rounds (the
// ticker's and Shutdown's) and guards what only they touch: the scratch
// space, the result metrics state and the emission itself, which happens
// outside mu. sinkMu guards the registered next consumers.
type core struct {
	cfg     *Config
	attrCfg attribution.Config
	logger  *zap.Logger
	clock   clock
	tel     *selfTelemetry
	refs    int // guarded by cores

	mu     sync.Mutex
	conv   *ingest.Converter
	jobs   map[string]*jobState
	hidden []output.HiddenPoint
	// spareHidden is the previous tick's hidden slice, reused once emitted.
	spareHidden  []output.HiddenPoint
	wantHidden   bool
	ranks        int
	events       int
	batch        batchCounts
	batchSig     signal
	batchNow     time.Time // wall clock of the batch being converted
	skips        skipLog
	addFn        func(*ingest.Record)
	addRunFn     func(*ingest.SampleRun)
	addMarkersFn func(*ingest.MarkerRun)
	skipFn       func(ingest.Skip)
	// last caches the (job, rank) of the previous record: consecutive
	// records nearly always belong to the same rank. Reset whenever a job
	// leaves c.jobs.
	last lastRank

	evalMu  sync.Mutex
	scratch evalScratch
	results resultMetrics
	ids     output.IDSource
	// emitter delivers result batches off the evaluation goroutine.
	emitter *emitter
	// emitDeadline bounds the wait for the downstream over the whole
	// shutdown; set by the first shutdownSignal (guarded by lifeMu).
	emitDeadline time.Time

	// sinks are the processors sharing the core, in creation order. Results
	// go to the first live one of each signal: a component named in two
	// pipelines of one signal merges their inputs into one state and reports
	// each result once.
	sinkMu sync.Mutex
	sinks  []*lifecycle

	lifeMu  sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

type lastRank struct {
	job  *jobState
	rank int64
	rb   *rankBuffer
}

func newCore(cfg *Config, set processor.Settings, clk clock) (*core, error) {
	attrCfg, err := attribution.ResolveConfig(cfg.Preset, cfg.Overrides)
	if err != nil {
		return nil, err
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	tel, err := newSelfTelemetry(tb)
	if err != nil {
		tb.Shutdown()
		return nil, err
	}
	c := &core{
		cfg:     cfg,
		attrCfg: attrCfg,
		logger:  set.Logger,
		clock:   clk,
		tel:     tel,
		conv:    ingest.NewConverter(cfg.ingestConfig(), clk.now),
		jobs:    map[string]*jobState{},
		skips:   skipLog{logger: set.Logger, now: clk.now},
		results: newResultMetrics(),
		ids:     output.NewRandomIDSource(),
	}
	c.emitter = newEmitter(cfg.EmitTimeout, set.Logger, tel.emitFailed)
	cfg.logWarnings(set.Logger)
	c.addFn = c.addRecord
	c.addRunFn = c.addSampleRun
	c.addMarkersFn = c.addMarkerRun
	c.skipFn = c.skip
	return c, nil
}

// register adds a processor's next consumer.
func (c *core) register(l *lifecycle) {
	c.sinkMu.Lock()
	c.sinks = append(c.sinks, l)
	hasMetrics := c.hasSinkLocked(signalMetrics)
	c.sinkMu.Unlock()
	c.mu.Lock()
	c.wantHidden = hasMetrics
	c.mu.Unlock()
}

// unregister removes a processor registered with register.
func (c *core) unregister(l *lifecycle) {
	c.sinkMu.Lock()
	if i := slices.Index(c.sinks, l); i >= 0 {
		c.sinks = slices.Delete(c.sinks, i, i+1)
	}
	hasMetrics := c.hasSinkLocked(signalMetrics)
	c.sinkMu.Unlock()
	c.mu.Lock()
	c.wantHidden = hasMetrics
	if !hasMetrics {
		c.hidden = nil
	}
	c.mu.Unlock()
}

func (c *core) hasSinkLocked(s signal) bool {
	for _, l := range c.sinks {
		if l.signal == s {
			return true
		}
	}
	return false
}

// currentSinks returns the consumer each signal's results go to (nil when no
// pipeline of that signal is alive): the first registered of each signal.
func (c *core) currentSinks() (t consumer.Traces, m consumer.Metrics, lc consumer.Logs) {
	c.sinkMu.Lock()
	defer c.sinkMu.Unlock()
	for _, l := range c.sinks {
		switch {
		case l.traces != nil && t == nil:
			t = l.traces
		case l.metrics != nil && m == nil:
			m = l.metrics
		case l.logs != nil && lc == nil:
			lc = l.logs
		}
	}
	return t, m, lc
}

// start launches the evaluation loop once, whichever processor starts first.
// The loop has its own context: the one passed to Start ends with Start.
func (c *core) start(ctx context.Context) {
	c.lifeMu.Lock()
	defer c.lifeMu.Unlock()
	if c.started {
		return
	}
	c.started = true
	c.tel.recordLimits(ctx, c.cfg.Limits)
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.done = make(chan struct{})
	go c.run(runCtx)
}

func (c *core) run(ctx context.Context) {
	defer close(c.done)
	ticks, stop := c.clock.newTicker(c.cfg.EvaluationInterval)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			// Errors are logged and counted inside; nobody waits for them.
			_ = c.evaluate(ctx, false)
		}
	}
}

// shutdownSignal is one processor's Shutdown: it evaluates every job one
// last time and emits what is pending to every pipeline still alive,
// including this one's, then unregisters this pipeline's consumer. The last
// processor of the core also stops the evaluation loop and the emitter.
//
// The wait for the downstream is bounded over the whole shutdown, whatever
// the downstream does: by ctx, and by emit_timeout from the first
// processor's Shutdown (the collector's own shutdown context has no
// deadline). What is not delivered by then is dropped and counted
// (emit_failures, reason shutdown); that is not an error of Shutdown.
func (c *core) shutdownSignal(ctx context.Context, l *lifecycle) error {
	err := c.evaluate(ctx, true)
	c.flushEmitter(ctx)
	c.unregister(l)
	if releaseCore(c) {
		c.lifeMu.Lock()
		if c.cancel != nil {
			c.cancel()
			<-c.done
			c.cancel = nil
		}
		c.lifeMu.Unlock()
		c.emitter.stop()
		c.tel.tb.Shutdown()
	}
	return err
}

func (c *core) consumeTraces(ctx context.Context, td ptrace.Traces) {
	c.mu.Lock()
	c.batchSig = signalTraces
	c.batchNow = c.clock.now()
	c.conv.ConvertTraces(td, c.addFn, c.addMarkersFn, c.skipFn)
	b := c.takeBatch()
	c.mu.Unlock()
	c.tel.addBatch(ctx, signalTraces, &b)
}

func (c *core) consumeMetrics(ctx context.Context, md pmetric.Metrics) {
	c.mu.Lock()
	c.batchSig = signalMetrics
	c.batchNow = c.clock.now()
	c.conv.ConvertMetrics(md, c.addRunFn, c.skipFn)
	b := c.takeBatch()
	c.mu.Unlock()
	c.tel.addBatch(ctx, signalMetrics, &b)
}

func (c *core) consumeLogs(ctx context.Context, ld plog.Logs) {
	c.mu.Lock()
	c.batchSig = signalLogs
	c.batchNow = c.clock.now()
	c.conv.ConvertLogs(ld, c.addFn, c.skipFn)
	b := c.takeBatch()
	c.mu.Unlock()
	c.tel.addBatch(ctx, signalLogs, &b)
}

// takeBatch returns and resets the counts of the batch just converted and
// publishes the buffer sizes. Called with mu held.
func (c *core) takeBatch() batchCounts {
	b := c.batch
	c.batch = batchCounts{}
	c.publishSizes()
	return b
}

func (c *core) publishSizes() {
	c.tel.jobs.Store(int64(len(c.jobs)))
	c.tel.ranks.Store(int64(c.ranks))
	c.tel.eventsBuffered.Store(int64(c.events))
}

// skip counts and (rate-limited) logs an item that is not converted. Called
// with mu held.
func (c *core) skip(s ingest.Skip) {
	c.batch.skipped[reasonIndex(s.Reason)]++
	c.skips.log(c.batchSig, s)
}

// addRecord buffers one converted record under its job and rank, enforcing
// the job, rank, window and per-rank bounds. Called with mu held.
func (c *core) addRecord(rec *ingest.Record) {
	ts := rec.TimestampNs
	switch rec.Kind {
	case ingest.KindPhaseSpan:
		ts = rec.PhaseSpan.EndNs
	case ingest.KindMarker:
		// A span is stale only when all its markers are; pushMarkers skips
		// the stale ones of a span that is not.
		if len(rec.MarkerTimesNs) == 0 {
			return
		}
		ts = slices.Max(rec.MarkerTimesNs)
	}
	// Records nearly always belong to the rank of the previous one (c.last).
	job, rb := c.rankOf(rec.JobID, rec.Rank, ts)
	if rb == nil {
		return
	}

	// The window moves before the push, so that making room on a full rank
	// drops what the record pushes out of the window first.
	job.newestNs = max(job.newestNs, ts)
	added := 0
	switch rec.Kind {
	case ingest.KindMarker:
		added += c.pushMarkers(job, rb, rec)
	case ingest.KindPhaseSpan:
		added += c.pushPhaseSpan(job, rb, rec)
	case ingest.KindStormlog:
		added += c.pushStormlog(job, rb, &rec.Event)
		if e := &rec.Event; attribution.IsSample(e) {
			c.addHidden(rec.JobID, rec.Rank, e.TimestampNs, e.DeviceUsedBytes.Value, e.AllocatorReservedBytes.Value)
		}
	}
	if added == 0 {
		return
	}
	c.added(job, rb, added, ts)
	c.noteRank(job, rb, rec.WorldSize, rec.Host)
}

// addMarkerRun buffers the marker spans of one (job, rank) as addRecord
// would buffer each as a KindMarker Record. When the rank has room for all
// their markers and none is stale even against the run's newest time, they
// are pushed with the lookups and the per-rank bookkeeping done once.
func (c *core) addMarkerRun(run *ingest.MarkerRun) {
	first, job, rb := c.firstRanked(run.JobID, run.Rank, len(run.Spans), func(i int) int64 { return slices.Max(run.Spans[i].TimesNs) })
	if rb == nil {
		return
	}
	spans := run.Spans[first:]
	markers, oldest, newest := 0, int64(math.MaxInt64), job.newestNs
	for i := range spans {
		times := spans[i].TimesNs
		markers += len(times)
		oldest, newest = min(oldest, slices.Min(times)), max(newest, slices.Max(times))
	}
	maxCap := c.cfg.Limits.MaxEventsPerRank
	if rb.len()+markers > maxCap || oldest < cutoffAt(newest, c.cfg.Window) {
		for i := first; i < len(run.Spans); i++ {
			rec := run.Record(i)
			c.addRecord(&rec)
		}
		return
	}
	session := rb.sessionIndex("")
	for i := range spans {
		m := markerEntry{session: session, ref: rb.spanRefCode(spans[i].Ref, maxCap)}
		for _, ts := range spans[i].TimesNs {
			m.TimestampNs = ts
			rb.markers.push(m, ts, maxCap)
		}
	}
	c.addedRun(job, rb, len(spans), markers, oldest, newest)
	c.noteRank(job, rb, run.WorldSize, run.Host)
}

// addSampleRun buffers the samples of one (job, rank) in time order, as
// addRecord would buffer each as a KindSample Record, with the lookups and
// the per-rank bookkeeping done once per run.
func (c *core) addSampleRun(run *ingest.SampleRun) {
	first, job, rb := c.firstRanked(run.JobID, run.Rank, len(run.Samples), func(i int) int64 { return run.Samples[i].TimestampNs })
	if rb == nil {
		return
	}
	samples := run.Samples[first:]
	// Metrics carry no stormlog session: the job id stands in, which is also
	// the session of phase spans from traces, so that those spans resolve
	// the phase of metrics-derived spikes.
	session := rb.sessionIndex(run.JobID)
	maxCap := c.cfg.Limits.MaxEventsPerRank
	if rb.len()+len(samples) > maxCap {
		c.addSamplesOneByOne(job, rb, run, samples, session)
		return
	}
	// The common case: the rank has room for the run, and the samples are
	// in time order, so none is stale once the first is not.
	for i := range samples {
		p := &samples[i]
		rb.samples.push(sampleEntryOf(p, session), p.TimestampNs, maxCap)
		c.addHidden(run.JobID, run.Rank, p.TimestampNs, p.DeviceUsed, p.AllocatorReserved)
	}
	c.addedRun(job, rb, len(samples), len(samples), samples[0].TimestampNs, samples[len(samples)-1].TimestampNs)
	c.noteRank(job, rb, run.WorldSize, run.Host)
}

// addSamplesOneByOne buffers samples of run, the first of which found rb, on
// a rank without room for them all: each makes room for itself, as a record
// of its own would. (None is stale: they are in time order, and the first
// was not.)
func (c *core) addSamplesOneByOne(job *jobState, rb *rankBuffer, run *ingest.SampleRun, samples []ingest.SamplePoint, session uint32) {
	for i := range samples {
		p := &samples[i]
		ts := p.TimestampNs
		job.newestNs = max(job.newestNs, ts)
		c.makeRoom(job, rb)
		rb.samples.push(sampleEntryOf(p, session), ts, c.cfg.Limits.MaxEventsPerRank)
		c.addHidden(run.JobID, run.Rank, ts, p.DeviceUsed, p.AllocatorReserved)
		c.added(job, rb, 1, ts)
	}
	c.noteRank(job, rb, run.WorldSize, run.Host)
}

// sampleEntryOf is the buffered form of a sample.
func sampleEntryOf(p *ingest.SamplePoint, session uint32) sampleEntry {
	e := sampleEntry{TimestampNs: p.TimestampNs, GapBytes: attribution.HiddenGap(p.DeviceUsed, p.AllocatorReserved), session: session}
	if p.Has&ingest.HasDeviceTotal != 0 && p.DeviceTotal > 0 {
		e.TotalBytes = p.DeviceTotal
	}
	return e
}

// firstRanked returns the index of the first of n records of one job and
// rank (record i at time tsOf(i)) whose rank is found, and the job and rank;
// each record before it is skipped, as rankOf skips a record. rb is nil
// when none is found.
func (c *core) firstRanked(jobID string, rank int64, n int, tsOf func(int) int64) (int, *jobState, *rankBuffer) {
	for i := range n {
		if job, rb := c.rankOf(jobID, rank, tsOf(i)); rb != nil {
			return i, job, rb
		}
	}
	return n, nil, nil
}

// addedRun accounts for a run of records (entries pushed to rb, their
// times from oldestNs to newestNs) pushed at once: the job's newest time
// moves before the lazy trim, as it does per record.
func (c *core) addedRun(job *jobState, rb *rankBuffer, records, entries int, oldestNs, newestNs int64) {
	job.newestNs = max(job.newestNs, newestNs)
	c.events += entries
	job.events += entries
	c.batch.converted += int64(records)
	rb.frontNs = min(rb.frontNs, oldestNs)
	c.trimLazily(job, rb)
}

// rankOf returns the job and rank buffer of a record at ts, or nil rb when
// the record is skipped (stale, or over a limit).
func (c *core) rankOf(jobID string, rank, ts int64) (*jobState, *rankBuffer) {
	// Records nearly always belong to the rank of the previous one (c.last),
	// and runs of another rank to its job.
	job, rb := c.last.job, c.last.rb
	if job == nil || job.id != jobID || c.last.rank != rank {
		if job, rb = c.lookup(jobID, rank, ts, job); rb == nil {
			return nil, nil
		}
		c.last = lastRank{job: job, rank: rank, rb: rb}
	} else if ts < job.cutoffNs(c.cfg.Window) {
		c.skip(ingest.Skip{Reason: ingest.SkipStale, Detail: "event time is older than the job's newest event minus window"})
		return nil, nil
	}
	return job, rb
}

// added accounts for n entries of one record at ts pushed to rb.
func (c *core) added(job *jobState, rb *rankBuffer, n int, ts int64) {
	c.events += n
	job.events += n
	c.batch.converted++
	rb.frontNs = min(rb.frontNs, ts)
	c.trimLazily(job, rb)
}

// trimLazily trims the rank written to once its oldest entry is trimSlack
// behind the window, so that a trim drops a run of entries rather than one
// per record; the evaluation trims every rank exactly.
func (c *core) trimLazily(job *jobState, rb *rankBuffer) {
	if rb.frontNs < job.lazyCutoffNs(c.cfg.Window) {
		c.evict(job, boundWindow, rb.trim(job.cutoffNs(c.cfg.Window)))
	}
}

// noteRank records what records pushed to rb said of their rank, and that
// the job received data.
func (c *core) noteRank(job *jobState, rb *rankBuffer, worldSize int64, host string) {
	if worldSize > rb.worldSize {
		rb.worldSize = worldSize
	}
	if host != "" && host != rb.host {
		rb.host = host
	}
	job.lastSeen = c.batchNow
	job.dirty = true
}

// lookup finds or creates the job and rank of a record, enforcing the job
// and rank limits and the window; rb is nil when the record is skipped.
// hint is the job of the previous record (nil or a job still tracked):
// when it is the record's, the jobs map is not consulted.
func (c *core) lookup(jobID string, rank, ts int64, hint *jobState) (*jobState, *rankBuffer) {
	job := hint
	if job == nil || job.id != jobID {
		job = c.jobs[jobID]
	}
	if job == nil {
		if len(c.jobs) >= c.cfg.Limits.MaxJobs {
			c.skip(ingest.Skip{Reason: ingest.SkipOverLimit, Detail: "limits.max_jobs reached: data of a new job is not buffered"})
			return nil, nil
		}
		job = &jobState{id: jobID, ranks: map[int64]*rankBuffer{}, newestNs: math.MinInt64}
		c.jobs[jobID] = job
	}
	if ts < job.cutoffNs(c.cfg.Window) {
		c.skip(ingest.Skip{Reason: ingest.SkipStale, Detail: "event time is older than the job's newest event minus window"})
		c.forgetIfEmpty(job)
		return nil, nil
	}
	rb := job.rank(rank)
	if rb == nil {
		if len(job.ranks) >= c.cfg.Limits.MaxRanksPerJob {
			c.skip(ingest.Skip{Reason: ingest.SkipOverLimit, Detail: "limits.max_ranks_per_job reached: data of a new rank is not buffered"})
			c.forgetIfEmpty(job)
			return nil, nil
		}
		rb = &rankBuffer{}
		job.addRank(rank, rb)
		c.ranks++
	}
	return job, rb
}

// forgetIfEmpty drops a job that was created for a record that was then
// rejected, so that rejected data leaves no state behind.
func (c *core) forgetIfEmpty(job *jobState) {
	if len(job.ranks) == 0 {
		delete(c.jobs, job.id)
		c.last = lastRank{}
	}
}

func (c *core) evict(job *jobState, b bound, n int) {
	if n == 0 {
		return
	}
	c.batch.evicted[b] += int64(n)
	c.events -= n
	job.events -= n
}

// makeRoom evicts the rank's oldest entry when it is at max_events_per_rank.
// Entries past the window go first, as what they are: the trim on push is
// lazy, so a full rank may still hold some.
func (c *core) makeRoom(job *jobState, rb *rankBuffer) {
	if rb.len() < c.cfg.Limits.MaxEventsPerRank {
		return
	}
	c.evict(job, boundWindow, rb.trim(job.cutoffNs(c.cfg.Window)))
	if rb.len() >= c.cfg.Limits.MaxEventsPerRank {
		rb.evictOldest()
		c.evict(job, boundMaxEventsPerRank, 1)
	}
}

// pushMarkers buffers the marker times of one marker span; a time before
// the window is skipped as stale, as a record would be. When the rank has
// room for them all and none is stale, the span is stored once and its
// markers are written straight into the ring.
func (c *core) pushMarkers(job *jobState, rb *rankBuffer, rec *ingest.Record) int {
	times := rec.MarkerTimesNs
	maxCap := c.cfg.Limits.MaxEventsPerRank
	cutoff := job.cutoffNs(c.cfg.Window)
	oldest := slices.Min(times)
	m := markerEntry{session: rb.sessionIndex("")}
	if rb.len()+len(times) <= maxCap && oldest >= cutoff {
		m.ref = rb.spanRefCode(rec.Marker, maxCap)
		for _, ts := range times {
			m.TimestampNs = ts
			rb.markers.push(m, ts, maxCap)
		}
		rb.frontNs = min(rb.frontNs, oldest)
		return len(times)
	}
	n := 0
	for _, ts := range times {
		if ts < cutoff {
			c.skip(ingest.Skip{Reason: ingest.SkipStale, Detail: "event time is older than the job's newest event minus window"})
			continue
		}
		// Making room may evict the span's own earlier markers and with
		// them its table entry, so the entry is looked up per marker.
		c.makeRoom(job, rb)
		rb.pushMarker(ts, rec.Marker, m.session, maxCap)
		rb.frontNs = min(rb.frontNs, ts)
		n++
	}
	return n
}

func (c *core) pushPhaseSpan(job *jobState, rb *rankBuffer, rec *ingest.Record) int {
	c.makeRoom(job, rb)
	e := phaseSpanEntryOf(rec)
	if e.ParentID != noParent {
		rb.phaseWaiting++
	}
	rb.phaseSpans.push(e, c.cfg.Limits.MaxEventsPerRank)
	return 1
}

// pushStormlog buffers a stormlog record the way the reference reads it: a
// usable sample feeds the samples (S3), any record whose text matches a
// collective token is a marker (S2), phase boundaries feed the phase index
// (§3.2) when phases are on, and every record counts for the trace start
// (S6).
func (c *core) pushStormlog(job *jobState, rb *rankBuffer, e *telemetry.Event) int {
	n := 0
	if attribution.IsSample(e) {
		c.makeRoom(job, rb)
		rb.pushSample(attribution.SampleOf(e), c.cfg.Limits.MaxEventsPerRank)
		n++
	}
	if attribution.IsMarker(e) {
		c.makeRoom(job, rb)
		rb.pushMarker(e.TimestampNs, ingest.SpanRef{}, rb.sessionIndex(e.SessionID), c.cfg.Limits.MaxEventsPerRank)
		n++
	}
	// Without phases a boundary counts only for the trace start (S6), as
	// any other record: it is kept as one.
	if c.cfg.Phases && (e.EventType == "phase_enter" || e.EventType == "phase_exit") {
		c.makeRoom(job, rb)
		rb.boundaries.push(*e, c.cfg.Limits.MaxEventsPerRank)
		n++
	}
	if n == 0 {
		c.makeRoom(job, rb)
		rb.others.push(otherEntry{TimestampNs: e.TimestampNs, session: rb.sessionIndex(e.SessionID)}, c.cfg.Limits.MaxEventsPerRank)
		n++
	}
	return n
}

// addHidden records a gpu.memory.hidden point (device used − allocator
// reserved, signed) of a sample when a metrics pipeline will report it.
func (c *core) addHidden(job string, rank, ts, used, reserved int64) {
	if !c.wantHidden {
		return
	}
	if len(c.hidden) >= maxHiddenPointsPerTick {
		c.batch.hiddenDropped++ // counted, not silent
		return
	}
	c.hidden = append(c.hidden, output.HiddenPoint{JobID: job, Rank: rank, TimestampNs: ts, Bytes: used - reserved})
}
