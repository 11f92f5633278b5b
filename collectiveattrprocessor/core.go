package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"context"
	"errors"
	"iter"
	"math"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
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
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/store"
)

// maxHiddenPointsPerTick bounds the gpu.memory.hidden points kept between
// two evaluation ticks. Past it, only each rank's newest point of that
// interval is reported, so that every rank of a large job still shows its
// current hidden memory (the buffered samples themselves are unaffected).
const maxHiddenPointsPerTick = 1 << 16

// core is the state shared by the traces, metrics and logs processors of one
// component ID: the converter, the buffer store, the evaluation loop and
// the result sinks.
//
// Locking, in one sentence: locks are taken only in the order lifeMu →
// evalMu → mu, and mu is never held across an attribution, a storage
// write or a call into the next consumers. mu guards what a Consume call
// touches (the converter, the store, the hidden-memory points, the skip
// log) and the registered next consumers; it is held while a batch is converted and buffered, a job
// is read for evaluation or its results are claimed, never while a job is
// attributed, so Consume calls never wait for an evaluation. evalMu
// serialises evaluation rounds and checkpoints (the ticker's and
// Shutdown's) and guards what only they touch: the engine's scratch space
// and evidence mode's baseline caches (updated while the engine runs
// without mu), the result metrics state, the ledgers and the checkpointer;
// emission happens under it, outside mu. lifeMu guards start and stop (the
// loop's cancel and done, the shutdown's emission deadline); it cannot be
// evalMu because stopping waits for the loop, which takes evalMu.
type core struct {
	cfg     *Config
	attrCfg attribution.Config
	// engine is the engine of cfg.Mode's strategy (modeStrategies),
	// chosen once; its scratch space is guarded by evalMu.
	engine engine
	logger *zap.Logger
	clock  clock
	tel    *selfTelemetry
	// factory holds the core for its component ID while refs (guarded
	// by the factory) processors use it.
	factory *factory
	refs    int

	mu     sync.Mutex
	conv   *ingest.Converter
	store  *store.Store
	hidden []output.HiddenPoint
	// hiddenNewest is, per (job, rank), its newest gpu.memory.hidden point
	// past the tick's cap (maxHiddenPointsPerTick).
	hiddenNewest newestHidden
	// spareHidden is the previous tick's hidden slice, reused once emitted.
	spareHidden []output.HiddenPoint
	wantHidden  bool
	// hiddenPoints is whether gpu.memory.hidden is enabled: without it the
	// samples still make the peaks, but no point is kept per sample.
	hiddenPoints bool
	// peaks holds each (job, rank)'s peak memory since it was last reported
	// (gpu.memory.hidden.peak), when wantHidden.
	peaks *output.HiddenPeaks
	skips skipLog
	// sinks are the processors sharing the core, in creation order. Results
	// go to the first live one of each signal: a component named in two
	// pipelines of one signal merges their inputs into one state and reports
	// each result once.
	sinks []*lifecycle

	evalMu  sync.Mutex
	results resultMetrics
	// ledgers and ledgerPoints are evidence mode's hidden-memory ledger
	// and the round's points of it (ledger.go; evidence mode only).
	ledgers      *ledgers
	ledgerPoints []output.LedgerPoint
	ids          output.IDSource
	// metrics builds the result metrics the configuration enables.
	metrics *output.Metrics
	// emitter delivers result batches off the evaluation goroutine.
	emitter *emitter
	// round numbers the evaluation rounds (delivery.go).
	round uint64
	// id is the component's: the storage client is the component's.
	id component.ID
	// ckpt keeps the jobs in the storage extension (nil without storage:
	// or before Start).
	ckpt *checkpointer
	// emitDeadline bounds the wait for the downstream over the whole
	// shutdown; set by the first shutdownSignal (guarded by lifeMu).
	emitDeadline time.Time

	lifeMu  sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func newCore(cfg *Config, set processor.Settings, clk clock) (*core, error) {
	mode, err := cfg.strategy()
	if err != nil {
		return nil, err
	}
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
	eng, err := mode.newEngine(cfg, attrCfg, engineNotes{worldSizeDisagreement: func(job, detail string, size int64) {
		tb.ProcessorCollectiveattrWorldSizeDisagreements.Add(context.Background(), 1)
		set.Logger.Warn("collectiveattr: the job's ranks declare different world sizes; evidence mode uses the size most of them declare",
			zap.String("job_id", job), zap.String("declared", detail), zap.Int64("world_size", size))
	}})
	if err != nil {
		tb.Shutdown()
		return nil, err
	}
	st := store.New(cfg.storeConfig(mode))
	ic := cfg.ingestConfig(mode)
	ic.AdmitsJob = st.AdmitsJob // checked before the converter keeps anything of a job
	c := &core{
		cfg:          cfg,
		attrCfg:      attrCfg,
		engine:       eng,
		logger:       set.Logger,
		clock:        clk,
		tel:          tel,
		conv:         ingest.NewConverter(ic, clk.now),
		store:        st,
		skips:        skipLog{logger: set.Logger, now: clk.now},
		results:      newResultMetrics(),
		ledgers:      newLedgers(),
		peaks:        output.NewHiddenPeaks(cfg.HiddenPeakInterval.Nanoseconds()),
		hiddenPoints: cfg.Metrics.Output.GpuMemoryHidden.Enabled,
		ids:          output.NewRandomIDSource(),
		metrics:      output.NewMetrics(metadata.MetricsBuilderConfig{Metrics: cfg.Metrics.Output, ResourceAttributes: metadata.DefaultResourceAttributesConfig()}, set),
	}
	c.emitter = newEmitter(cfg.EmitTimeout, set.Logger, tel.emitFailed)
	c.id = set.ID
	cfg.logWarnings(set.Logger)
	return c, nil
}

// register adds a processor's next consumer.
func (c *core) register(l *lifecycle) {
	c.mu.Lock()
	c.sinks = append(c.sinks, l)
	c.wantHidden = c.hasSinkLocked(signalMetrics)
	c.mu.Unlock()
}

// unregister removes a processor registered with register.
func (c *core) unregister(l *lifecycle) {
	c.mu.Lock()
	if i := slices.Index(c.sinks, l); i >= 0 {
		c.sinks = slices.Delete(c.sinks, i, i+1)
	}
	hasMetrics := c.hasSinkLocked(signalMetrics)
	c.wantHidden = hasMetrics
	if !hasMetrics {
		c.hidden, c.hiddenNewest = nil, newestHidden{}
		c.peaks = output.NewHiddenPeaks(c.cfg.HiddenPeakInterval.Nanoseconds())
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
	c.mu.Lock()
	defer c.mu.Unlock()
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

// start restores the jobs from the storage extension, if one is
// configured, and launches the evaluation loop, once, whichever processor
// starts first. The loop has its own context: the one passed to Start ends
// with Start.
func (c *core) start(ctx context.Context, host component.Host) error {
	c.lifeMu.Lock()
	defer c.lifeMu.Unlock()
	if c.started {
		return nil
	}
	c.evalMu.Lock()
	err := c.openStorage(ctx, host)
	c.evalMu.Unlock()
	if err != nil {
		return err
	}
	c.started = true
	c.tel.recordLimits(ctx, c.cfg.Limits)
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.done = make(chan struct{})
	go c.run(runCtx)
	return nil
}

func (c *core) run(ctx context.Context) {
	defer close(c.done)
	ticks, stop := c.clock.newTicker(c.cfg.EvaluationInterval)
	defer stop()
	var checkpoints <-chan time.Time
	if c.ckpt != nil {
		var stopCheckpoints func()
		checkpoints, stopCheckpoints = c.clock.newTicker(c.cfg.CheckpointInterval)
		defer stopCheckpoints()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			// Errors are logged and counted inside; nobody waits for them.
			_ = c.evaluate(ctx, false)
		case <-checkpoints:
			c.evalMu.Lock()
			c.checkpoint(ctx)
			c.evalMu.Unlock()
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
//
// With storage, jobs outlive the process: Shutdown runs an ordinary round
// (idle jobs are still finalised) and the last checkpoint keeps the rest,
// which the next start restores, so a rolling update resumes every job
// where it stood instead of cutting it in two.
func (c *core) shutdownSignal(ctx context.Context, l *lifecycle) error {
	err := c.evaluate(ctx, c.ckpt == nil)
	c.flushEmitter(ctx)
	c.unregister(l)
	if c.factory.release(c) {
		c.lifeMu.Lock()
		if c.cancel != nil {
			c.cancel()
			<-c.done
			c.cancel = nil
		}
		c.lifeMu.Unlock()
		c.closeStorage(ctx)
		c.emitter.stop()
		c.tel.tb.Shutdown()
	}
	return err
}

func (c *core) consumeTraces(ctx context.Context, td ptrace.Traces) {
	c.ingest(ctx, signalTraces, c.conv.Traces(td))
}

func (c *core) consumeMetrics(ctx context.Context, md pmetric.Metrics) {
	c.ingest(ctx, signalMetrics, c.conv.Metrics(md))
}

func (c *core) consumeLogs(ctx context.Context, ld plog.Logs) {
	c.ingest(ctx, signalLogs, c.conv.Logs(ld))
}

// ingest buffers what the converter reads of one batch of sig, counts it
// and logs what was skipped. The conversion runs as reads is ranged over,
// under mu.
func (c *core) ingest(ctx context.Context, sig signal, reads iter.Seq[ingest.Read]) {
	var b batchCounts
	c.mu.Lock()
	now := c.clock.now()
	for r := range reads {
		switch {
		case r.SampleRun != nil:
			run := r.SampleRun
			c.addHiddenRun(&b, run, c.store.AddSampleRun(run, now))
		case r.MarkerRun != nil:
			c.store.AddMarkerRun(r.MarkerRun, now)
		case r.Record != nil:
			rec := r.Record
			if c.store.AddRecord(rec, now) && rec.Kind == ingest.KindStormlog && rec.Stormlog&ingest.StormlogSample != 0 {
				e := &rec.Event
				c.addHidden(&b, rec.JobID, rec.Rank, e.TimestampNs, e.DeviceUsedBytes.Value, e.AllocatorReservedBytes.Value, e.DeviceTotalBytes.Value)
			}
		case r.Skip != nil:
			b.skipped[reasonIndex(r.Skip.Reason)]++
			c.skips.log(sig, *r.Skip, 1)
		}
	}
	b.worldSizesIgnored = c.conv.TakeWorldSizesIgnored()
	c.takeStoreTally(sig, &b)
	c.publishSizes()
	c.mu.Unlock()
	c.tel.addBatch(ctx, sig, &b)
}

// takeStoreTally adds what the store did since it was last asked to b, and
// logs what it refused as sig's skips. Called with mu held.
func (c *core) takeStoreTally(sig signal, b *batchCounts) {
	t := c.store.Take()
	b.converted += t.Buffered
	for err, n := range t.Rejections() {
		s := skipOf(err)
		b.skipped[reasonIndex(s.Reason)] += n
		c.skips.log(sig, s, n)
	}
	for i, n := range t.Evicted {
		b.evicted[i] += n
	}
}

// skipOf is the skip reason of an error of the store.
func skipOf(err error) ingest.Skip {
	var limit *store.LimitError
	switch {
	case errors.As(err, &limit):
		return ingest.Skip{Reason: ingest.SkipOverLimit, Detail: err.Error()}
	case errors.Is(err, store.ErrStale):
		return ingest.Skip{Reason: ingest.SkipStale, Detail: err.Error()}
	case errors.Is(err, store.ErrDuplicate):
		return ingest.Skip{Reason: ingest.SkipDuplicate, Detail: err.Error()}
	case errors.Is(err, store.ErrRankConflict):
		return ingest.Skip{Reason: ingest.SkipRankConflict, Detail: err.Error()}
	}
	return ingest.Skip{Reason: ingest.SkipInvalidValue, Detail: err.Error()}
}

func (c *core) publishSizes() {
	jobs, ranks, events := c.store.Sizes()
	c.tel.jobs.Store(int64(jobs))
	c.tel.ranks.Store(int64(ranks))
	c.tel.eventsBuffered.Store(int64(events))
}

// addHidden records a gpu.memory.hidden point (device used − allocator
// reserved, signed) of a sample when a metrics pipeline will report it, and
// the sample's part in its rank's peaks (total: the device's capacity, 0
// when the sample has none). Every sample counts towards the peaks, those
// past the per-round cap of hidden points too.
func (c *core) addHidden(b *batchCounts, job string, rank, ts, used, reserved, total int64) {
	if !c.wantHidden {
		return
	}
	c.peaks.Observe(job, rank, used, reserved, total)
	if !c.hiddenPoints {
		return
	}
	p := output.HiddenPoint{JobID: job, Rank: rank, TimestampNs: ts, Bytes: used - reserved}
	if len(c.hidden) < maxHiddenPointsPerTick {
		c.hidden = append(c.hidden, p)
		return
	}
	c.keepNewestHidden(b, p, 1)
}

// addHiddenRun is addHidden of the samples of run from first on. Their
// part in the rank's peaks is observed once, and the samples past the cap,
// which are in time order, are settled at once by the run's newest: no map
// access per sample.
func (c *core) addHiddenRun(b *batchCounts, run *ingest.SampleRun, first int) {
	if !c.wantHidden || first == len(run.Samples) {
		return
	}
	samples := run.Samples[first:]
	maxHidden, maxUsed, total := int64(math.MinInt64), int64(math.MinInt64), int64(0)
	for i := range samples {
		p := &samples[i]
		maxHidden, maxUsed = max(maxHidden, p.DeviceUsed-p.AllocatorReserved), max(maxUsed, p.DeviceUsed)
		if p.Has&ingest.HasDeviceTotal != 0 && p.DeviceTotal > 0 {
			total = p.DeviceTotal
		}
	}
	c.peaks.ObserveMax(run.JobID, run.Rank, maxHidden, maxUsed, total)
	if !c.hiddenPoints {
		return
	}
	room := max(0, maxHiddenPointsPerTick-len(c.hidden))
	for _, p := range samples[:min(room, len(samples))] {
		c.hidden = append(c.hidden, output.HiddenPoint{JobID: run.JobID, Rank: run.Rank, TimestampNs: p.TimestampNs, Bytes: p.DeviceUsed - p.AllocatorReserved})
	}
	if past := len(samples) - room; past > 0 {
		newest := &samples[len(samples)-1]
		c.keepNewestHidden(b, output.HiddenPoint{
			JobID: run.JobID, Rank: run.Rank, TimestampNs: newest.TimestampNs, Bytes: newest.DeviceUsed - newest.AllocatorReserved,
		}, past)
	}
}

// keepNewestHidden settles n points of one rank past the cap, the newest of
// them p: the rank's newest point past the cap is kept, the others are
// counted as dropped (not silent).
func (c *core) keepNewestHidden(b *batchCounts, p output.HiddenPoint, n int) {
	b.hiddenDropped += c.hiddenNewest.keep(p, n)
}

// takeHiddenLocked returns the tick's gpu.memory.hidden points, each rank's
// newest past the cap last (by job, then rank), and starts the next tick's.
func (c *core) takeHiddenLocked() []output.HiddenPoint {
	hidden := c.hiddenNewest.take(c.hidden)
	if c.wantHidden {
		c.hidden, c.spareHidden = c.spareHidden[:0], nil
	}
	return hidden
}
