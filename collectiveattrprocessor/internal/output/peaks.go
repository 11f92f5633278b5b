package output

import (
	"cmp"
	"slices"
	"strings"
)

// PeakPoint is one (job, rank)'s peaks over the samples received since the
// previous PeakPoint of that (job, rank).
type PeakPoint struct {
	JobID string
	Rank  int64
	// HiddenBytes is the highest device used − allocator reserved (signed).
	HiddenBytes int64
	// DeviceUsedBytes is the highest device memory in use.
	DeviceUsedBytes int64
	// DeviceTotalBytes is the device's capacity from the newest sample
	// that reported one; 0 when none did.
	DeviceTotalBytes int64
}

// HiddenPeaks keeps, per (job, rank), the peak hidden and device-used
// memory of the samples received since that series was last reported.
//
// A Prometheus exporter keeps only the last value it received per series,
// and a scrape reads it every 15-30 s: per-sample gpu.memory.hidden points
// lose a 200 ms spike unless its sample happens to be the last before the
// scrape. A peak reported at most once per interval and held by the
// exporter until the next report is read by every scrape interval up to
// that interval, so a spike shows in at least one scrape.
type HiddenPeaks struct {
	intervalNs int64
	// series: a batch's sample runs go through one job's ranks in turn,
	// which RankIndex finds by index.
	series RankIndex[*peakSeries]
}

type peakSeries struct {
	point PeakPoint
	// pending: a sample arrived since the last report.
	pending bool
	// reportedNs is the wall time of the last report; 0 before the first.
	reportedNs int64
}

// NewHiddenPeaks reports each series at most once per intervalNs (0: at
// every Due call).
func NewHiddenPeaks(intervalNs int64) *HiddenPeaks {
	return &HiddenPeaks{intervalNs: intervalNs}
}

// Observe records one sample of (job, rank): device used and allocator
// reserved bytes, and the device total when known (> 0).
func (p *HiddenPeaks) Observe(job string, rank, used, reserved, total int64) {
	p.ObserveMax(job, rank, used-reserved, used, total)
}

// ObserveMax records samples of (job, rank) at once: their largest hidden
// bytes (device used − allocator reserved) and device used bytes, and the
// newest device total known (> 0; 0 when none is).
func (p *HiddenPeaks) ObserveMax(job string, rank, hidden, used, total int64) {
	s, ok := p.series.Indexed(job, rank)
	if !ok {
		s, _ = p.series.GetOrAdd(job, rank, newPeakSeries)
	}
	if !s.pending {
		s.pending = true
		s.point.HiddenBytes, s.point.DeviceUsedBytes = hidden, used
	} else {
		s.point.HiddenBytes = max(s.point.HiddenBytes, hidden)
		s.point.DeviceUsedBytes = max(s.point.DeviceUsedBytes, used)
	}
	if total > 0 {
		s.point.DeviceTotalBytes = total
	}
}

func newPeakSeries(job string, rank int64) *peakSeries {
	return &peakSeries{point: PeakPoint{JobID: job, Rank: rank}}
}

// Due returns, in (job, rank) order, the peaks of the series that received
// samples and were last reported at least the interval before nowNs, and
// starts their next interval. The series of the ending jobs (finalised and
// forgotten) are reported whatever the interval, and dropped.
func (p *HiddenPeaks) Due(nowNs int64, ending []string) []PeakPoint {
	var out []PeakPoint
	for k, s := range p.series.All() {
		ends := slices.Contains(ending, k.Job)
		if ends {
			p.series.Delete(k.Job, k.Rank)
		}
		if !s.pending || (!ends && s.reportedNs != 0 && nowNs-s.reportedNs < p.intervalNs) {
			continue
		}
		out = append(out, s.point)
		s.pending, s.reportedNs = false, nowNs
	}
	slices.SortFunc(out, func(a, b PeakPoint) int {
		return cmp.Or(strings.Compare(a.JobID, b.JobID), cmp.Compare(a.Rank, b.Rank))
	})
	return out
}

// Len is the number of series held.
func (p *HiddenPeaks) Len() int { return p.series.Len() }
