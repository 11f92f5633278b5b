package output

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Result metric names and units (contract §5.2).
const (
	MetricHidden          = "gpu.memory.hidden"
	MetricIntervals       = "collective_attribution.intervals"
	MetricAttributedBytes = "collective_attribution.attributed_bytes"
	MetricConfidence      = "collective_attribution.confidence"
	// MetricHiddenUsage is the hidden-memory ledger (docs/evidence-mode.md
	// §6), one point per part, named as system.memory.usage is with its
	// state: parts that add up to a whole are one metric with an attribute.
	MetricHiddenUsage = "gpu.memory.hidden.usage"
	AttrHiddenPart    = "gpu.memory.hidden.part"
)

// LedgerPoint is a rank's hidden-memory ledger at its newest sample: the
// parts add up to that sample's hidden memory.
type LedgerPoint struct {
	JobID                      string
	Rank                       int64
	TimestampNs                int64
	NCCL, Context, Unexplained int64
}

// HiddenPoint is one gpu.memory.hidden value: device used − allocator
// reserved of a sample (signed).
type HiddenPoint struct {
	JobID       string
	Rank        int64
	TimestampNs int64
	Bytes       int64
}

// IntervalCount is the cumulative number of results emitted for (job, rank,
// classification) since StartNs.
type IntervalCount struct {
	JobID          string
	Rank           int64
	Classification string
	Count          int64
	StartNs        int64
	// Mode and Kind are an evidence-mode result's ("" in the reference
	// mode, whose points carry neither).
	Mode, Kind string
}

// LatestResult is the latest emitted result of (job, rank); TimestampNs is
// the time its values are reported at.
type LatestResult struct {
	JobID          string
	Rank           int64
	Classification string
	PeakGapBytes   int64
	Confidence     float64
	TimestampNs    int64
	Mode, Kind     string
}

// AppendMetrics appends the result metrics (contract §5.2), one resource
// per job (service.name collectiveattr, training.job.id) in order of first
// appearance, each with the metrics that have points for that job:
//   - gpu.memory.hidden: gauge, By, one point per HiddenPoint;
//   - gpu.memory.hidden.peak, gpu.memory.device.used.peak: gauges, By, one
//     point per PeakPoint at nowNs: the highest value over the samples
//     received since the previous point of that (job, rank);
//   - gpu.memory.device.limit: gauge, By, the device's capacity, at nowNs,
//     for the PeakPoints that know it;
//   - gpu.memory.hidden.usage: gauge, By, three points per LedgerPoint at
//     its time, gpu.memory.hidden.part nccl, context and unexplained;
//   - collective_attribution.intervals: cumulative monotonic sum,
//     {interval}, start = StartNs, time = nowNs;
//   - collective_attribution.attributed_bytes: gauge, By, the latest
//     result's peak gap, at LatestResult.TimestampNs;
//   - collective_attribution.confidence: gauge, 1, the latest result's
//     confidence, at LatestResult.TimestampNs.
//
// The data points carry training.job.id as well as training.rank (and the
// classification where listed), so that a Prometheus exporter without
// resource-to-telemetry conversion still labels each series with its job.
func AppendMetrics(dst pmetric.Metrics, hidden []HiddenPoint, peaks []PeakPoint, ledger []LedgerPoint, intervals []IntervalCount, latest []LatestResult, nowNs int64) {
	if len(hidden) == 0 && len(peaks) == 0 && len(ledger) == 0 && len(intervals) == 0 && len(latest) == 0 {
		return
	}
	jobs := map[string]*jobMetrics{}
	job := func(id string) *jobMetrics {
		jm, ok := jobs[id]
		if !ok {
			rm := dst.ResourceMetrics().AppendEmpty()
			putResource(rm.Resource().Attributes(), id, "")
			sm := rm.ScopeMetrics().AppendEmpty()
			sm.Scope().SetName(ScopeName)
			jm = &jobMetrics{ms: sm.Metrics()}
			jobs[id] = jm
		}
		return jm
	}
	var run *jobMetrics // the job of the previous point: points come in runs of one job
	lastJob := ""
	for i := range hidden {
		h := &hidden[i]
		if run == nil || h.JobID != lastJob {
			run, lastJob = job(h.JobID), h.JobID
		}
		if !run.hasHidden {
			run.hidden, run.hasHidden = newGauge(run.ms, MetricHidden, "By",
				"Device memory in use minus the framework allocator's reserved bytes, per sample (signed)."), true
		}
		dp := run.hidden.AppendEmpty()
		dp.SetTimestamp(pcommon.Timestamp(h.TimestampNs))
		dp.SetIntValue(h.Bytes)
		putRankAttributes(dp.Attributes(), h.JobID, h.Rank, "")
	}
	for i := range peaks {
		p := &peaks[i]
		jm := job(p.JobID)
		if !jm.hasPeaks {
			jm.hiddenPeak = newGauge(jm.ms, MetricHiddenPeak, "By",
				"Highest gpu.memory.hidden over the samples received since the previous point of this series.")
			jm.usedPeak = newGauge(jm.ms, MetricDeviceUsedPeak, "By",
				"Highest device memory in use over the samples received since the previous point of this series.")
			jm.hasPeaks = true
		}
		putPeak(jm.hiddenPeak, p, p.HiddenBytes, nowNs)
		putPeak(jm.usedPeak, p, p.DeviceUsedBytes, nowNs)
		if p.DeviceTotalBytes > 0 {
			if !jm.hasLimit {
				jm.limit, jm.hasLimit = newGauge(jm.ms, MetricDeviceLimit, "By", "Device memory capacity of the rank's GPU, from its newest sample that reported it."), true
			}
			putPeak(jm.limit, p, p.DeviceTotalBytes, nowNs)
		}
	}
	for i := range ledger {
		lp := &ledger[i]
		jm := job(lp.JobID)
		if !jm.hasLedger {
			jm.ledger, jm.hasLedger = newGauge(jm.ms, MetricHiddenUsage, "By",
				"Hidden memory of the rank at its newest sample, by part: nccl, context and unexplained add up to gpu.memory.hidden."), true
		}
		for _, part := range [...]struct {
			name  string
			bytes int64
		}{{"nccl", lp.NCCL}, {"context", lp.Context}, {"unexplained", lp.Unexplained}} {
			dp := jm.ledger.AppendEmpty()
			dp.SetTimestamp(pcommon.Timestamp(lp.TimestampNs))
			dp.SetIntValue(part.bytes)
			putRankAttributes(dp.Attributes(), lp.JobID, lp.Rank, "")
			dp.Attributes().PutStr(AttrHiddenPart, part.name)
		}
	}
	for i := range intervals {
		ic := &intervals[i]
		jm := job(ic.JobID)
		if !jm.hasIntervals {
			m := jm.ms.AppendEmpty()
			m.SetName(MetricIntervals)
			m.SetUnit("{interval}")
			m.SetDescription("Attributed intervals emitted, by classification.")
			s := m.SetEmptySum()
			s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			s.SetIsMonotonic(true)
			jm.intervals, jm.hasIntervals = s.DataPoints(), true
		}
		dp := jm.intervals.AppendEmpty()
		dp.SetStartTimestamp(pcommon.Timestamp(ic.StartNs))
		dp.SetTimestamp(pcommon.Timestamp(nowNs))
		dp.SetIntValue(ic.Count)
		putRankAttributes(dp.Attributes(), ic.JobID, ic.Rank, ic.Classification)
		putModeAttributes(dp.Attributes(), ic.Mode, ic.Kind)
	}
	for i := range latest {
		lr := &latest[i]
		jm := job(lr.JobID)
		if !jm.hasLatest {
			jm.bytes = newGauge(jm.ms, MetricAttributedBytes, "By", "Peak hidden-memory gap of the latest emitted result.")
			jm.confidence = newGauge(jm.ms, MetricConfidence, "1", "Confidence of the latest emitted result.")
			jm.hasLatest = true
		}
		dp := jm.bytes.AppendEmpty()
		dp.SetTimestamp(pcommon.Timestamp(lr.TimestampNs))
		dp.SetIntValue(lr.PeakGapBytes)
		putRankAttributes(dp.Attributes(), lr.JobID, lr.Rank, lr.Classification)
		putModeAttributes(dp.Attributes(), lr.Mode, lr.Kind)
		dp = jm.confidence.AppendEmpty()
		dp.SetTimestamp(pcommon.Timestamp(lr.TimestampNs))
		dp.SetDoubleValue(lr.Confidence)
		putRankAttributes(dp.Attributes(), lr.JobID, lr.Rank, "")
		putModeAttributes(dp.Attributes(), lr.Mode, lr.Kind)
	}
}

type jobMetrics struct {
	ms                                   pmetric.MetricSlice
	hidden, intervals, bytes, confidence pmetric.NumberDataPointSlice
	hiddenPeak, usedPeak, limit, ledger  pmetric.NumberDataPointSlice
	hasHidden, hasIntervals, hasLatest   bool
	hasPeaks, hasLimit, hasLedger        bool
}

func putPeak(dps pmetric.NumberDataPointSlice, p *PeakPoint, v, nowNs int64) {
	dp := dps.AppendEmpty()
	dp.SetTimestamp(pcommon.Timestamp(nowNs))
	dp.SetIntValue(v)
	putRankAttributes(dp.Attributes(), p.JobID, p.Rank, "")
}

func newGauge(ms pmetric.MetricSlice, name, unit, desc string) pmetric.NumberDataPointSlice {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	m.SetDescription(desc)
	return m.SetEmptyGauge().DataPoints()
}

func putRankAttributes(m pcommon.Map, job string, rank int64, classification string) {
	m.EnsureCapacity(3)
	m.PutStr(AttrJobID, job)
	m.PutInt(AttrRank, rank)
	if classification != "" {
		m.PutStr(AttrClassification, classification)
	}
}
