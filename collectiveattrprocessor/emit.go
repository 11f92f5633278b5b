package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
)

type rankKey struct {
	job  string
	rank int64
}

type countKey struct {
	rankKey
	classification string
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
	r := &it.Result
	k := countKey{rankKey{it.JobID, r.Rank}, r.Classification}
	ic := m.counts[k]
	if ic == nil {
		ic = &output.IntervalCount{JobID: it.JobID, Rank: r.Rank, Classification: r.Classification, StartNs: nowNs}
		m.counts[k] = ic
	}
	ic.Count++
	m.latest[k.rankKey] = &output.LatestResult{
		JobID:          it.JobID,
		Rank:           r.Rank,
		Classification: r.Classification,
		PeakGapBytes:   r.Evidence.PeakGapBytes,
		Confidence:     r.Confidence,
		TimestampNs:    r.EndNs(),
	}
}

// snapshot returns the counts and latest results in (job, rank,
// classification) order.
func (m *resultMetrics) snapshot() ([]output.IntervalCount, []output.LatestResult) {
	counts := make([]output.IntervalCount, 0, len(m.counts))
	for _, ic := range m.counts {
		counts = append(counts, *ic)
	}
	slices.SortFunc(counts, func(a, b output.IntervalCount) int {
		return cmp.Or(strings.Compare(a.JobID, b.JobID), cmp.Compare(a.Rank, b.Rank), strings.Compare(a.Classification, b.Classification))
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

// emit sends this round's results and result metrics to the live pipelines.
// Called with evalMu held and mu not held. A downstream error is logged,
// counted and returned; the other signals are still tried.
func (c *core) emit(ctx context.Context, items []output.Item, hidden []output.HiddenPoint, now time.Time, forget []string) error {
	nowNs := now.UnixNano()
	for i := range items {
		c.results.record(&items[i], nowNs)
		c.tel.resultEmitted(ctx, items[i].Result.Classification)
	}
	traces, metrics, logs := c.currentSinks()
	var errs []error
	fail := func(s signal, err error) {
		c.tel.tb.ProcessorCollectiveattrEmitFailures.Add(ctx, 1, c.tel.emitFailures[s])
		c.logger.Error("collectiveattr: the next consumer refused results", zap.String("signal", s.String()), zap.Error(err))
		errs = append(errs, fmt.Errorf("emitting result %s: %w", s, err))
	}
	if traces != nil && len(items) > 0 {
		td := ptrace.NewTraces()
		output.AppendTraces(td, items, c.ids)
		if err := traces.ConsumeTraces(ctx, td); err != nil {
			fail(signalTraces, err)
		}
	}
	if logs != nil && len(items) > 0 {
		ld := plog.NewLogs()
		output.AppendLogs(ld, items, c.cfg.Phases)
		if err := logs.ConsumeLogs(ctx, ld); err != nil {
			fail(signalLogs, err)
		}
	}
	if metrics != nil && (len(hidden) > 0 || len(c.results.counts) > 0) {
		counts, latest := c.results.snapshot()
		md := pmetric.NewMetrics()
		output.AppendMetrics(md, hidden, counts, latest, nowNs)
		if err := metrics.ConsumeMetrics(ctx, md); err != nil {
			fail(signalMetrics, err)
		}
	}
	c.results.forget(forget)
	return errors.Join(errs...)
}
