package output

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
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

// Metrics builds the result metrics (contract §5.2) declared in
// metadata.yaml with the MetricsBuilder mdatagen generates from it
// (documentation.md lists them), one resource per job (service.name
// collectiveattr, training.job.id) in order of first appearance, each with
// the metrics that have points for that job:
//   - gpu.memory.hidden: one point per HiddenPoint, in their order;
//   - gpu.memory.hidden.peak, gpu.memory.device.used.peak: one point per
//     PeakPoint at nowNs: the highest value over the samples received since
//     the previous point of that (job, rank);
//   - gpu.memory.device.limit: the device's capacity, at nowNs, for the
//     PeakPoints that know it;
//   - gpu.memory.hidden.usage: three points per LedgerPoint at its time,
//     gpu.memory.hidden.part nccl, context and unexplained;
//   - collective_attribution.intervals: cumulative, start = StartNs, time =
//     nowNs;
//   - collective_attribution.attributed_bytes, collective_attribution.confidence:
//     the latest result's peak gap and confidence, at LatestResult.TimestampNs.
//
// The data points carry training.job.id as well as training.rank (and the
// classification where listed), so that a Prometheus exporter without
// resource-to-telemetry conversion still labels each series with its job.
// A metric the configuration disables has no points. Not safe for
// concurrent use: the processor appends under its evaluation lock.
type Metrics struct {
	mb *metadata.MetricsBuilder
	rb *metadata.ResourceBuilder
	// jobs are the jobs of one Append in order of first appearance, with
	// the indices of their points; index maps a job id to its place.
	jobs  []jobPoints
	index map[string]int
}

type jobPoints struct {
	id                                       string
	hidden, peaks, ledger, intervals, latest []int
}

// NewMetrics returns a builder of the metrics cfg enables; set gives the
// scope's version (the collector's).
func NewMetrics(cfg metadata.MetricsBuilderConfig, set processor.Settings) *Metrics {
	// Gauge points carry no start time; the interval counts set theirs
	// (Append).
	mb := metadata.NewMetricsBuilder(cfg, set, metadata.WithStartTime(0))
	return &Metrics{mb: mb, rb: mb.NewResourceBuilder(), index: map[string]int{}}
}

// Append appends the result metrics of the points given to dst.
func (m *Metrics) Append(dst pmetric.Metrics, hidden []HiddenPoint, peaks []PeakPoint, ledger []LedgerPoint, intervals []IntervalCount, latest []LatestResult, nowNs int64) {
	if len(hidden) == 0 && len(peaks) == 0 && len(ledger) == 0 && len(intervals) == 0 && len(latest) == 0 {
		return
	}
	m.group(hidden, peaks, ledger, intervals, latest)
	now := pcommon.Timestamp(nowNs)
	mb := m.mb
	for ji := range m.jobs {
		jp := &m.jobs[ji]
		for _, i := range jp.hidden {
			h := &hidden[i]
			mb.RecordGpuMemoryHiddenDataPoint(pcommon.Timestamp(h.TimestampNs), h.Bytes, h.JobID, h.Rank)
		}
		for _, i := range jp.peaks {
			p := &peaks[i]
			mb.RecordGpuMemoryHiddenPeakDataPoint(now, p.HiddenBytes, p.JobID, p.Rank)
			mb.RecordGpuMemoryDeviceUsedPeakDataPoint(now, p.DeviceUsedBytes, p.JobID, p.Rank)
			if p.DeviceTotalBytes > 0 {
				mb.RecordGpuMemoryDeviceLimitDataPoint(now, p.DeviceTotalBytes, p.JobID, p.Rank)
			}
		}
		for _, i := range jp.ledger {
			lp := &ledger[i]
			ts := pcommon.Timestamp(lp.TimestampNs)
			mb.RecordGpuMemoryHiddenUsageDataPoint(ts, lp.NCCL, metadata.AttributeHiddenPartNccl, lp.JobID, lp.Rank)
			mb.RecordGpuMemoryHiddenUsageDataPoint(ts, lp.Context, metadata.AttributeHiddenPartContext, lp.JobID, lp.Rank)
			mb.RecordGpuMemoryHiddenUsageDataPoint(ts, lp.Unexplained, metadata.AttributeHiddenPartUnexplained, lp.JobID, lp.Rank)
		}
		for _, i := range jp.intervals {
			ic := &intervals[i]
			// The builder stamps the points it records with its start time:
			// each count's is when its series began.
			mb.Reset(metadata.WithStartTime(pcommon.Timestamp(ic.StartNs)))
			mb.RecordCollectiveAttributionIntervalsDataPoint(now, ic.Count, ic.JobID, ic.Rank,
				metadata.MapAttributeResultClassification[ic.Classification], modeOptions(ic.Mode, ic.Kind)...)
		}
		if len(jp.intervals) > 0 {
			mb.Reset(metadata.WithStartTime(0))
		}
		for _, i := range jp.latest {
			lr := &latest[i]
			ts := pcommon.Timestamp(lr.TimestampNs)
			opts := modeOptions(lr.Mode, lr.Kind)
			mb.RecordCollectiveAttributionAttributedBytesDataPoint(ts, lr.PeakGapBytes, lr.JobID, lr.Rank,
				metadata.MapAttributeResultClassification[lr.Classification], opts...)
			mb.RecordCollectiveAttributionConfidenceDataPoint(ts, lr.Confidence, lr.JobID, lr.Rank, opts...)
		}
		m.rb.SetServiceName(ServiceName)
		m.rb.SetTrainingJobID(jp.id)
		mb.EmitForResource(metadata.WithResource(m.rb.Emit()))
	}
	mb.Emit().ResourceMetrics().MoveAndAppendTo(dst.ResourceMetrics())
}

// group sorts the points' indices into m.jobs by job, jobs in order of
// first appearance.
func (m *Metrics) group(hidden []HiddenPoint, peaks []PeakPoint, ledger []LedgerPoint, intervals []IntervalCount, latest []LatestResult) {
	clear(m.index)
	for i := range m.jobs {
		jp := &m.jobs[i]
		jp.hidden, jp.peaks, jp.ledger, jp.intervals, jp.latest = jp.hidden[:0], jp.peaks[:0], jp.ledger[:0], jp.intervals[:0], jp.latest[:0]
	}
	m.jobs = m.jobs[:0]
	last, lastJob := -1, ""
	job := func(id string) *jobPoints {
		// Points come in runs of one job: most lookups repeat the last.
		if last >= 0 && id == lastJob {
			return &m.jobs[last]
		}
		ji, ok := m.index[id]
		if !ok {
			ji = len(m.jobs)
			m.index[id] = ji
			if ji < cap(m.jobs) {
				m.jobs = m.jobs[:ji+1]
			} else {
				m.jobs = append(m.jobs, jobPoints{})
			}
			m.jobs[ji].id = id
		}
		last, lastJob = ji, id
		return &m.jobs[ji]
	}
	for i := range hidden {
		jp := job(hidden[i].JobID)
		jp.hidden = append(jp.hidden, i)
	}
	for i := range peaks {
		jp := job(peaks[i].JobID)
		jp.peaks = append(jp.peaks, i)
	}
	for i := range ledger {
		jp := job(ledger[i].JobID)
		jp.ledger = append(jp.ledger, i)
	}
	for i := range intervals {
		jp := job(intervals[i].JobID)
		jp.intervals = append(jp.intervals, i)
	}
	for i := range latest {
		jp := job(latest[i].JobID)
		jp.latest = append(jp.latest, i)
	}
}

// modeOptions are the mode and kind attributes of a result metric's point:
// evidence mode's only (mode "" writes none, and the reference mode's
// metrics are unchanged).
func modeOptions(mode, kind string) []metadata.MetricAttributeOption {
	if mode == "" {
		return nil
	}
	return []metadata.MetricAttributeOption{metadata.WithResultModeMetricAttribute(mode), metadata.WithResultKindMetricAttribute(kind)}
}
