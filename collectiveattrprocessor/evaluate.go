package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/store"
)

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
		c.skips.log(signalMetrics, ingest.Skip{Reason: ingest.SkipUnjoinable, Detail: "device-used points found no allocator-reserved partner in time"}, int64(n))
	}
	// Partner points the join buffers dropped without a device-used point
	// (the Convert calls report the others as Skips).
	if n := c.conv.TakeOrphaned(); n > 0 {
		b.skipped[reasonIndex(ingest.SkipOrphaned)] += int64(n)
		c.skips.log(signalMetrics, ingest.Skip{Reason: ingest.SkipOrphaned, Detail: "partner points expired with no device-used point of their rank within sample_join_tolerance"}, int64(n))
	}
	inspected := c.retryInspector(now)
	// on_job_end emits nothing before the job ends, so it skips the
	// per-tick evaluation altogether.
	due := c.store.Sweep(now, c.cfg.JobIdleTimeout, final, c.cfg.Emit == EmitOnSettle)
	c.takeStoreTally(signalMetrics, &b)
	hidden := c.takeHiddenLocked()
	c.publishSizes()
	c.mu.Unlock()
	c.tel.addBatch(ctx, signalMetrics, &b)
	c.tel.addBatch(ctx, signalLogs, &inspected)

	var (
		items  []output.Item
		forget []string
		errs   []error
	)
	c.round++
	if c.ckpt != nil {
		c.mu.Lock()
		for _, d := range due {
			if d.Detached != nil {
				c.keepFinal(d.Detached, c.round)
			}
		}
		c.mu.Unlock()
	}
	for _, d := range due {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			c.logger.Warn("collectiveattr: evaluation cut short by the shutdown deadline; pending results are lost", zap.Error(err))
			break
		}
		if d.Detached != nil {
			items = c.evaluateDetached(ctx, d.Detached, items)
			forget = append(forget, d.ID)
			continue
		}
		items = c.evaluateLive(ctx, d.ID, items)
	}
	var delivery *roundDelivery
	if cp := c.ckpt; cp != nil && len(forget) > 0 {
		// The finalised jobs' final checkpoints are written before their
		// results leave, and deleted once the results are accepted
		// (delivery.go).
		c.checkpoint(ctx)
		round := c.round
		delivery = newRoundDelivery(func() { cp.acks.add(round) })
	}
	// Emission call site: hands the round's batches to c.emitter, never
	// waits for the downstream.
	c.mu.Lock()
	peaks := c.peaks.Due(now.UnixNano(), forget)
	c.mu.Unlock()
	c.emit(ctx, items, hidden, peaks, now, forget, delivery)
	c.ledgerPoints = c.ledgerPoints[:0]
	c.mu.Lock()
	c.ledgers.keep(func(id string) bool { return c.store.Job(id) != nil })
	c.spareHidden = hidden[:0]
	c.tel.phaseSpansWaiting.Store(int64(c.store.PhaseSpansWaiting()))
	c.mu.Unlock()
	return errors.Join(errs...)
}

// evaluateLive evaluates a job that stays tracked: its buffers are copied
// under the lock, attributed without it, and the emission decision (which
// updates the ranks' emitted intervals) is taken under the lock again.
func (c *core) evaluateLive(ctx context.Context, id string, items []output.Item) []output.Item {
	c.mu.Lock()
	job := c.store.Job(id)
	if job == nil {
		c.mu.Unlock()
		return items
	}
	run := c.engine.read(job.Job)
	c.mu.Unlock()
	results := c.attribute(ctx, run)
	growths := c.evaluateLedger(ctx, job, results)
	c.engine.release()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.growthItems(job, growths, c.claimResults(job, results, false, items))
}

// evaluateDetached evaluates and finalises a job Sweep detached: no other
// goroutine can reach the job, so its snapshot is taken without the lock;
// the claims take it, as the store's own state may record them.
func (c *core) evaluateDetached(ctx context.Context, job *store.Job, items []output.Item) []output.Item {
	run := c.engine.read(job.Job)
	results := c.attribute(ctx, run)
	growths := c.evaluateLedger(ctx, job, results)
	c.engine.release()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.growthItems(job, growths, c.claimResults(job, results, true, items))
}

// evaluateLedger adds the job's ledger points to the round's (evidence
// mode), counts those whose sample was unusual, and returns its growth
// results. It reads the engine's latest read, without the lock.
func (c *core) evaluateLedger(ctx context.Context, job *store.Job, results []attribution.Result) []attribution.Result {
	in, padding := c.engine.ledgerInput()
	if in == nil {
		return nil
	}
	var (
		growths []attribution.Result
		flagged ledgerFlagCounts
	)
	c.ledgerPoints, growths, flagged = c.ledgers.evaluate(job.ID(), in, results, padding, c.ledgerPoints, c.engine.workers())
	c.tel.addLedgerFlags(ctx, flagged)
	return growths
}

// growthItems appends the growth results to items. They are no claim on
// the rank's emitted intervals (a minute of growth must not hold back the
// collective results inside it); the ledger keeps their own (ledger.go).
func (c *core) growthItems(job *store.Job, growths []attribution.Result, items []output.Item) []output.Item {
	for i := range growths {
		items = append(items, output.Item{JobID: job.ID(), Host: job.Host(growths[i].Rank), Preset: c.attrCfg.Preset, Result: &growths[i]})
	}
	return items
}

func (c *core) attribute(ctx context.Context, run func() []attribution.Result) []attribution.Result {
	start := time.Now()
	results := run()
	c.tel.tb.ProcessorCollectiveattrEvaluations.Add(ctx, 1)
	c.tel.tb.ProcessorCollectiveattrEvaluationDuration.Record(ctx, time.Since(start).Seconds())
	return results
}

// claimResults appends to items the results the store lets leave now; an
// item points at its result in results. The results that matched one
// collective share its CollectiveSpan, whose member spans are looked up
// once.
func (c *core) claimResults(job *store.Job, results []attribution.Result, finalise bool, items []output.Item) []output.Item {
	var collectives map[*attribution.CollectiveMatch]*output.CollectiveSpan
	// A world-wide spike claims a result per rank: growing items by
	// doubling would copy and allocate twice what they hold.
	items = slices.Grow(items, len(results))
	// The results' links share one slice (an evidence-mode result links
	// at most one span of its own).
	links := make([]ingest.SpanRef, 0, len(results))
	for i := range results {
		r := &results[i]
		host, grown, ok := c.store.Claim(job, r, c.engine.settleDelay(c.cfg.SettleDelay), finalise, links)
		if !ok {
			continue
		}
		var own []ingest.SpanRef
		if len(grown) > len(links) {
			own = grown[len(links):len(grown):len(grown)]
		}
		links = grown
		var collective *output.CollectiveSpan
		if m := r.Collective; m != nil {
			if collective = collectives[m]; collective == nil {
				if collectives == nil {
					collectives = map[*attribution.CollectiveMatch]*output.CollectiveSpan{}
				}
				collective = &output.CollectiveSpan{Match: m, MemberSpans: c.store.MemberSpans(job, m)}
				collectives[m] = collective
			}
		}
		items = append(items, output.Item{
			JobID:      job.ID(),
			Host:       host,
			Preset:     c.attrCfg.Preset,
			Result:     r,
			Links:      own,
			Collective: collective,
		})
	}
	return items
}
