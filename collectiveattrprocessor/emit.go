package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
	"github.com/collectiveattr/collectiveattr/evidence"
)

type rankKey struct {
	job  string
	rank int64
}

type countKey struct {
	rankKey
	classification string
	// mode and kind are "" in the reference mode.
	mode, kind string
}

// resultMetrics is the state behind the result metrics (contract §5.2):
// cumulative interval counts per (job, rank, classification) and the latest
// emitted result per (job, rank). A job's entries are reported one last time
// after it is finalised, then dropped. Guarded by evalMu.
type resultMetrics struct {
	counts map[countKey]*output.IntervalCount
	latest map[rankKey]*output.LatestResult
}

func newResultMetrics() resultMetrics {
	return resultMetrics{counts: map[countKey]*output.IntervalCount{}, latest: map[rankKey]*output.LatestResult{}}
}

func (m *resultMetrics) record(it *output.Item, nowNs int64) {
	r := it.Result
	k := countKey{rankKey{it.JobID, r.Rank}, r.Classification, r.Mode, r.Kind}
	ic := m.counts[k]
	if ic == nil {
		ic = &output.IntervalCount{JobID: it.JobID, Rank: r.Rank, Classification: r.Classification, Mode: r.Mode, Kind: r.Kind, StartNs: nowNs}
		m.counts[k] = ic
	}
	ic.Count++
	m.latest[k.rankKey] = &output.LatestResult{
		JobID:          it.JobID,
		Rank:           r.Rank,
		Classification: r.Classification,
		Mode:           r.Mode,
		Kind:           r.Kind,
		PeakGapBytes:   attributedBytes(r),
		Confidence:     r.Confidence,
		TimestampNs:    r.EndNs(),
	}
}

// attributedBytes is the size the attributed_bytes gauge reports for a
// result: its peak hidden-memory gap, or, for a change only NCCL's reports
// saw (no sample measured a gap), the growth they show.
func attributedBytes(r *attribution.Result) int64 {
	if evidence.Unsampled(r) {
		return r.ExcessBytes
	}
	return r.Evidence.PeakGapBytes
}

// snapshot returns the counts and latest results in (job, rank,
// classification) order.
func (m *resultMetrics) snapshot() ([]output.IntervalCount, []output.LatestResult) {
	counts := make([]output.IntervalCount, 0, len(m.counts))
	for _, ic := range m.counts {
		counts = append(counts, *ic)
	}
	slices.SortFunc(counts, func(a, b output.IntervalCount) int {
		return cmp.Or(strings.Compare(a.JobID, b.JobID), cmp.Compare(a.Rank, b.Rank), strings.Compare(a.Classification, b.Classification), strings.Compare(a.Kind, b.Kind))
	})
	latest := make([]output.LatestResult, 0, len(m.latest))
	for _, lr := range m.latest {
		latest = append(latest, *lr)
	}
	slices.SortFunc(latest, func(a, b output.LatestResult) int {
		return cmp.Or(strings.Compare(a.JobID, b.JobID), cmp.Compare(a.Rank, b.Rank))
	})
	return counts, latest
}

func (m *resultMetrics) forget(jobs []string) {
	if len(jobs) == 0 {
		return
	}
	for k := range m.counts {
		if slices.Contains(jobs, k.job) {
			delete(m.counts, k)
		}
	}
	for k := range m.latest {
		if slices.Contains(jobs, k.job) {
			delete(m.latest, k)
		}
	}
}

// emit hands this round's results and result metrics to the emitter, which
// delivers them to the live pipelines off this goroutine (emitter.go);
// delivery (nil: not followed) learns of each batch accepted. Called with
// evalMu held and mu not held.
func (c *core) emit(ctx context.Context, items []output.Item, hidden []output.HiddenPoint, peaks []output.PeakPoint, now time.Time, forget []string, delivery *roundDelivery) {
	defer delivery.done()
	nowNs := now.UnixNano()
	for i := range items {
		c.results.record(&items[i], nowNs)
		c.tel.resultEmitted(ctx, items[i].Result.Classification)
	}
	traces, metrics, logs := c.currentSinks()
	if traces != nil && len(items) > 0 {
		td := ptrace.NewTraces()
		output.AppendTraces(td, items, c.ids)
		c.emitter.enqueue(signalTraces, resultBatch{results: len(items), accepted: delivery.batch(), send: func(ctx context.Context) error {
			return traces.ConsumeTraces(ctx, td)
		}})
	}
	if logs != nil && len(items) > 0 {
		ld := plog.NewLogs()
		output.AppendLogs(ld, items, c.cfg.Phases)
		c.emitter.enqueue(signalLogs, resultBatch{results: len(items), accepted: delivery.batch(), send: func(ctx context.Context) error {
			return logs.ConsumeLogs(ctx, ld)
		}})
	}
	ledgerPoints := c.ledgerPoints
	if metrics != nil && (len(hidden) > 0 || len(peaks) > 0 || len(ledgerPoints) > 0 || len(c.results.counts) > 0) {
		counts, latest := c.results.snapshot()
		md := pmetric.NewMetrics()
		c.metrics.Append(md, hidden, peaks, ledgerPoints, counts, latest, nowNs)
		c.emitter.enqueue(signalMetrics, resultBatch{accepted: delivery.batch(), send: func(ctx context.Context) error {
			return metrics.ConsumeMetrics(ctx, md)
		}})
	}
	c.results.forget(forget)
}
