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
	series     map[peakKey]*peakSeries
	// byRank is, for the job observed last (byRankJob), its series by rank
	// (ranks below maxIndexedRank): a batch's runs go through one job's
	// ranks in turn, and an index costs less than hashing (job, rank) for
	// each.
	byRankJob string
	byRank    []*peakSeries
}

// maxIndexedRank bounds the ranks HiddenPeaks indexes (a pointer each).
const maxIndexedRank = 1 << 14

type peakKey struct {
	job  string
	rank int64
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
	return &HiddenPeaks{intervalNs: intervalNs, series: map[peakKey]*peakSeries{}}
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
	s := p.seriesOf(job, rank)
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

// seriesOf returns the series of (job, rank), creating it.
func (p *HiddenPeaks) seriesOf(job string, rank int64) *peakSeries {
	indexed := uint64(rank) < maxIndexedRank
	if indexed && job == p.byRankJob && rank < int64(len(p.byRank)) && p.byRank[rank] != nil {
		return p.byRank[rank]
	}
	k := peakKey{job, rank}
	s := p.series[k]
	if s == nil {
		s = &peakSeries{point: PeakPoint{JobID: job, Rank: rank}}
		p.series[k] = s
	}
	if indexed {
		if job != p.byRankJob {
			clear(p.byRank)
			p.byRankJob = job
		}
		if rank >= int64(len(p.byRank)) {
			p.byRank = append(p.byRank, make([]*peakSeries, int(rank)+1-len(p.byRank))...)
		}
		p.byRank[rank] = s
	}
	return s
}

// Due returns, in (job, rank) order, the peaks of the series that received
// samples and were last reported at least the interval before nowNs, and
// starts their next interval. The series of the ending jobs (finalised and
// forgotten) are reported whatever the interval, and dropped.
func (p *HiddenPeaks) Due(nowNs int64, ending []string) []PeakPoint {
	var out []PeakPoint
	for k, s := range p.series {
		ends := slices.Contains(ending, k.job)
		if ends {
			delete(p.series, k)
			if k.job == p.byRankJob {
				clear(p.byRank)
				p.byRankJob = ""
			}
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
func (p *HiddenPeaks) Len() int { return len(p.series) }
