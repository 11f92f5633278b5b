package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// evalScratch is memory reused from one evaluation to the next (guarded by
// evalMu): an evaluation copies a job's buffers here so that the attribution
// itself runs without holding the buffers' lock.
type evalScratch struct {
	samples  []attribution.Sample
	markers  []int64
	ranks    []attribution.RankSeries
	rankIDs  []int64
	events   []telemetry.Event
	spans    []phase.Span
	sessions []sessionEnd
	parents  phaseParents
}

// sessionEnd is the newest event time of one (session, rank): the phase
// index closes scopes still open there (reference §3.2 step 5).
type sessionEnd struct {
	session string
	rank    int64
	endNs   int64
}

// jobInput is a job's evaluation input, built in the scratch space.
type jobInput struct {
	in       attribution.Input
	resolver attribution.PhaseResolver
}

// pendingJob is a job chosen for evaluation in this round. A finalised job
// has already been removed from the core (detached is set); a live one is
// looked up again under the lock.
type pendingJob struct {
	id       string
	detached *jobState
}

// evaluate runs one evaluation round. On a tick (final false) it evaluates
// the on_settle jobs with new data and finalises idle jobs; at Shutdown
// (final true) it finalises every job. Finalised jobs are emitted in full
// and forgotten. Results, and the result metrics, are emitted to the live
// pipelines outside the buffers' lock; errors are logged, counted and
// returned.
func (c *core) evaluate(ctx context.Context, final bool) error {
	c.evalMu.Lock()
	defer c.evalMu.Unlock()

	c.mu.Lock()
	now := c.clock.now()
	var b batchCounts
	if n := c.conv.Expire(); n > 0 {
		b.skipped[reasonIndex(ingest.SkipUnjoinable)] += int64(n)
		c.skips.log(signalMetrics, ingest.Skip{Reason: ingest.SkipUnjoinable, Detail: "device-used points found no allocator-reserved partner in time"})
	}
	// Partner points the join buffers dropped without a device-used point
	// (the Convert calls report the others as Skips).
	if n := c.conv.TakeOrphaned(); n > 0 {
		b.skipped[reasonIndex(ingest.SkipOrphaned)] += int64(n)
		c.skips.log(signalMetrics, ingest.Skip{Reason: ingest.SkipOrphaned, Detail: "partner points expired with no device-used point of their rank within sample_join_tolerance"})
	}
	var todo []pendingJob
	for id, job := range c.jobs {
		for _, rb := range job.ranks {
			if n := rb.trim(job.cutoffNs(c.cfg.Window)); n > 0 {
				b.evicted[boundWindow] += int64(n)
				c.events -= n
				job.events -= n
			}
		}
		switch {
		case final || now.Sub(job.lastSeen) >= c.cfg.JobIdleTimeout:
			delete(c.jobs, id)
			c.last = lastRank{}
			c.ranks -= len(job.ranks)
			c.events -= job.events
			todo = append(todo, pendingJob{id: id, detached: job})
		case job.dirty && c.cfg.Emit == EmitOnSettle:
			// on_job_end emits nothing before the job ends, so it skips
			// the per-tick evaluation altogether.
			todo = append(todo, pendingJob{id: id})
		}
		job.dirty = false
	}
	hidden := c.hidden
	if c.wantHidden {
		c.hidden, c.spareHidden = c.spareHidden[:0], nil
	}
	c.publishSizes()
	c.mu.Unlock()
	c.tel.addBatch(ctx, signalMetrics, &b)

	// Jobs are evaluated in a stable order so that emission order does not
	// depend on map iteration.
	slices.SortFunc(todo, func(x, y pendingJob) int { return cmp.Compare(x.id, y.id) })
	var (
		items  []output.Item
		forget []string
		errs   []error
	)
	for _, p := range todo {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			c.logger.Warn("collectiveattr: evaluation cut short by the shutdown deadline; pending results are lost", zap.Error(err))
			break
		}
		if p.detached != nil {
			items = c.evaluateJob(ctx, p.detached, true, items)
			forget = append(forget, p.id)
			continue
		}
		items = c.evaluateLive(ctx, p.id, items)
	}
	// Emission call site: hands the round's batches to c.emitter, never
	// waits for the downstream.
	c.emit(ctx, items, hidden, now, forget)
	c.mu.Lock()
	c.spareHidden = hidden[:0]
	c.publishPhaseWaiting()
	c.mu.Unlock()
	return errors.Join(errs...)
}

// evaluateLive evaluates a job that stays tracked: its buffers are copied
// under the lock, attributed without it, and the emission decision (which
// updates the ranks' emitted intervals) is taken under the lock again.
func (c *core) evaluateLive(ctx context.Context, id string, items []output.Item) []output.Item {
	c.mu.Lock()
	job := c.jobs[id]
	if job == nil {
		c.mu.Unlock()
		return items
	}
	in := c.buildInput(job)
	c.mu.Unlock()
	results := c.attribute(ctx, in)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.selectResults(job, results, false, items)
}

// evaluateJob evaluates a job that no other goroutine can reach.
func (c *core) evaluateJob(ctx context.Context, job *jobState, finalise bool, items []output.Item) []output.Item {
	in := c.buildInput(job)
	results := c.attribute(ctx, in)
	return c.selectResults(job, results, finalise, items)
}

func (c *core) attribute(ctx context.Context, in jobInput) []attribution.Result {
	start := time.Now()
	results := attribution.AttributeInput(in.in, c.attrCfg, in.resolver)
	c.tel.tb.ProcessorCollectiveattrEvaluations.Add(ctx, 1)
	c.tel.tb.ProcessorCollectiveattrEvaluationDuration.Record(ctx, time.Since(start).Seconds())
	return results
}

// buildInput copies a job's buffers (entries inside the window) into the
// scratch space as an attribution.Input, without materialising events:
// per rank the samples in time order (ties in arrival order, as after the
// reference's stable sort) and the marker times ascending; the expected
// world size is the largest declared one, else the number of ranks; the trace
// start is the earliest buffered event. With phases on, the phase index gets
// the stormlog phase boundaries, each (session, rank)'s newest event time
// and the phase spans from traces.
func (c *core) buildInput(job *jobState) jobInput {
	sc := &c.scratch
	cutoff := job.cutoffNs(c.cfg.Window)
	nSamples, nMarkers := 0, 0
	sc.rankIDs = sc.rankIDs[:0]
	for r, rb := range job.ranks {
		nSamples += rb.samples.len()
		nMarkers += rb.markers.len()
		sc.rankIDs = append(sc.rankIDs, r)
	}
	slices.Sort(sc.rankIDs)
	// Sized once, so that the per-rank sub-slices below stay valid.
	sc.samples = slices.Grow(sc.samples[:0], nSamples)
	sc.markers = slices.Grow(sc.markers[:0], nMarkers)
	sc.ranks = sc.ranks[:0]
	sc.events = sc.events[:0]
	sc.spans = sc.spans[:0]

	var (
		worldSize   int64
		ranksWithAn int64
		earliest    = int64(math.MaxInt64)
	)
	for _, r := range sc.rankIDs {
		rb := job.ranks[r]
		sc.sessions = sc.sessions[:0]
		withBoundaries := c.cfg.Phases && rb.boundaries.len() > 0
		seen := func(ts int64, session string) {
			earliest = min(earliest, ts)
			if withBoundaries && session != "" {
				sc.noteSession(session, r, ts)
			}
		}
		s0 := len(sc.samples)
		sorted := true
		for i := range rb.samples.len() {
			s := rb.samples.at(i)
			if s.TimestampNs < cutoff {
				continue
			}
			if n := len(sc.samples); n > s0 && sc.samples[n-1].TimestampNs > s.TimestampNs {
				sorted = false
			}
			session := rb.sessions[s.session]
			sc.samples = append(sc.samples, attribution.Sample{TimestampNs: s.TimestampNs, GapBytes: s.GapBytes, TotalBytes: s.TotalBytes, SessionID: session})
			seen(s.TimestampNs, session)
		}
		samples := sc.samples[s0:]
		if !sorted {
			slices.SortStableFunc(samples, func(a, b attribution.Sample) int { return cmp.Compare(a.TimestampNs, b.TimestampNs) })
		}
		m0 := len(sc.markers)
		for i := range rb.markers.len() {
			m := rb.markers.at(i)
			if m.TimestampNs < cutoff {
				continue
			}
			sc.markers = append(sc.markers, m.TimestampNs)
			seen(m.TimestampNs, rb.sessions[m.session])
		}
		markers := sc.markers[m0:]
		slices.Sort(markers)
		for i := range rb.others.len() {
			o := rb.others.at(i)
			if o.TimestampNs >= cutoff {
				seen(o.TimestampNs, rb.sessions[o.session])
			}
		}
		for i := range rb.boundaries.len() {
			e := rb.boundaries.at(i)
			if e.TimestampNs < cutoff {
				continue
			}
			seen(e.TimestampNs, e.SessionID)
			if c.cfg.Phases {
				sc.events = append(sc.events, *e)
			}
		}
		if c.cfg.Phases {
			if rb.phaseWaiting > 0 {
				rb.phaseWaiting = sc.parents.complete(&rb.phaseSpans)
			}
			for i := range rb.phaseSpans.len() {
				if s := rb.phaseSpans.at(i); s.EndNs >= cutoff {
					sc.spans = append(sc.spans, s.span(job.id, r))
				}
			}
		}
		for _, se := range sc.sessions {
			// The index only reads session, rank and time of events that
			// are not boundaries: one per (session, rank) at its newest time
			// gives it the session end.
			sc.events = append(sc.events, telemetry.Event{SchemaVersion: 3, SessionID: se.session, Rank: se.rank, TimestampNs: se.endNs, EventType: "sample"})
		}
		if rb.len() > 0 {
			ranksWithAn++
		}
		worldSize = max(worldSize, rb.worldSize)
		if len(samples) > 0 {
			sc.ranks = append(sc.ranks, attribution.RankSeries{Rank: r, Samples: samples, Markers: markers})
		}
	}
	if worldSize <= 0 {
		worldSize = max(ranksWithAn, 1)
	}
	if earliest == math.MaxInt64 {
		earliest = 0
	}
	ji := jobInput{in: attribution.Input{
		Ranks:             sc.ranks,
		ExpectedWorldSize: worldSize,
		TraceStartNs:      max(0, earliest),
	}}
	if c.cfg.Phases && (len(sc.events) > 0 || len(sc.spans) > 0) {
		// The index sorts sc.spans in place and keeps it: it is used only
		// by this job's attribution, before the scratch is reused.
		ji.resolver = phase.NewIndex(sc.events, sc.spans)
	}
	return ji
}

// publishPhaseWaiting sums the phase spans the ranks count as waiting for a
// parent (self-telemetry): those their latest evaluation left waiting, and
// those that arrived waiting since. Called with mu held, once per round: a
// walk over the ranks, not their entries.
func (c *core) publishPhaseWaiting() {
	n := 0
	for _, job := range c.jobs {
		for _, rb := range job.ranks {
			n += rb.phaseWaiting
		}
	}
	c.tel.phaseSpansWaiting.Store(int64(n))
}

func (sc *evalScratch) noteSession(session string, rank, ts int64) {
	for i := range sc.sessions {
		if sc.sessions[i].session == session {
			sc.sessions[i].endNs = max(sc.sessions[i].endNs, ts)
			return
		}
	}
	sc.sessions = append(sc.sessions, sessionEnd{session: session, rank: rank, endNs: ts})
}

// selectResults decides which results leave now and appends them to items.
//
// The identity of an emitted interval is (job, rank, its time range): once a
// rank has emitted an interval ending at E, a later result of that rank that
// starts at or before E is the same interval, grown or re-scored by newer
// data (the reference merges touching intervals the same way), and is never
// emitted again. A result is emitted when it has settled (the job's newest
// event time is more than settle_delay past its end) or when its job is
// finalised.
func (c *core) selectResults(job *jobState, results []attribution.Result, finalise bool, items []output.Item) []output.Item {
	settle := int64(c.cfg.SettleDelay)
	for i := range results {
		r := &results[i]
		rb := job.ranks[r.Rank]
		if rb == nil {
			continue
		}
		if rb.emitted && r.IntervalStartNs <= rb.emittedEndNs {
			continue
		}
		if !finalise && (job.newestNs-settle <= r.EndNs()) {
			continue
		}
		rb.emitted = true
		rb.emittedEndNs = max(rb.emittedEndNs, r.EndNs())
		items = append(items, output.Item{
			JobID:  job.id,
			Host:   rb.host,
			Preset: c.attrCfg.Preset,
			Result: *r,
			Links:  markerLinks(rb, r.MarkerTimesNs),
		})
	}
	return items
}

// markerLinks returns the distinct marker spans whose start, end or span
// event gave one of the result's marker times.
func markerLinks(rb *rankBuffer, times []int64) []ingest.SpanRef {
	if len(times) == 0 {
		return nil
	}
	var links []ingest.SpanRef
	for i := range rb.markers.len() {
		m := rb.markers.at(i)
		ref, ok := rb.markerRef(m)
		if !ok {
			continue
		}
		if _, ok := slices.BinarySearch(times, m.TimestampNs); !ok {
			continue
		}
		if !slices.Contains(links, ref) {
			links = append(links, ref)
		}
	}
	return links
}
