package output

import (
	"cmp"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

const (
	gib = int64(1) << 30
	sec = int64(1e9)
)

// TestHiddenPeaksHoldTheSpike: a 200 ms spike between two reports is the
// value of the next report, whatever came after it; a report holds only
// the samples since the previous one.
func TestHiddenPeaksHoldTheSpike(t *testing.T) {
	p := NewHiddenPeaks(30 * sec)
	const used, reserved = 12 * gib, 10 * gib
	p.Observe("j", 0, used, reserved, 80*gib)
	got := p.Due(1*sec, nil)
	require.Len(t, got, 1, "a series' first samples are reported at once")
	assert.Equal(t, PeakPoint{JobID: "j", Rank: 0, HiddenBytes: 2 * gib, DeviceUsedBytes: used, DeviceTotalBytes: 80 * gib}, got[0])

	p.Observe("j", 0, used, reserved, 0)
	p.Observe("j", 0, used+5*gib, reserved, 0) // the spike: 200 ms, two samples at 10 Hz
	p.Observe("j", 0, used+5*gib, reserved, 0)
	p.Observe("j", 0, used, reserved, 0)
	assert.Empty(t, p.Due(11*sec, nil), "within the interval: held")
	assert.Empty(t, p.Due(30*sec, nil), "29 s after the previous report: held")
	got = p.Due(31*sec, nil)
	require.Len(t, got, 1)
	assert.Equal(t, 7*gib, got[0].HiddenBytes, "the spike survives the samples after it")
	assert.Equal(t, used+5*gib, got[0].DeviceUsedBytes)
	assert.Equal(t, 80*gib, got[0].DeviceTotalBytes, "the capacity is kept from the sample that had it")

	assert.Empty(t, p.Due(100*sec, nil), "no sample since the report: nothing")
	p.Observe("j", 0, used-3*gib, reserved, 0)
	got = p.Due(101*sec, nil)
	require.Len(t, got, 1)
	assert.Equal(t, -1*gib, got[0].HiddenBytes, "a new interval starts from its own samples, signed")
}

func TestHiddenPeaksPerSeriesAndEnding(t *testing.T) {
	p := NewHiddenPeaks(30 * sec)
	p.Observe("b", 1, 3*gib, gib, 0)
	p.Observe("a", 2, 2*gib, gib, 0)
	p.Observe("a", 1, 4*gib, gib, 0)
	got := p.Due(sec, nil)
	require.Len(t, got, 3)
	assert.Equal(t, []PeakPoint{
		{JobID: "a", Rank: 1, HiddenBytes: 3 * gib, DeviceUsedBytes: 4 * gib},
		{JobID: "a", Rank: 2, HiddenBytes: gib, DeviceUsedBytes: 2 * gib},
		{JobID: "b", Rank: 1, HiddenBytes: 2 * gib, DeviceUsedBytes: 3 * gib},
	}, got, "(job, rank) order")

	// Job a ends before its interval is over: its pending peak is reported
	// at once and its series dropped; job b's stays held.
	p.Observe("a", 1, 9*gib, gib, 0)
	p.Observe("b", 1, 9*gib, gib, 0)
	got = p.Due(2*sec, []string{"a"})
	assert.Equal(t, []PeakPoint{{JobID: "a", Rank: 1, HiddenBytes: 8 * gib, DeviceUsedBytes: 9 * gib}}, got)
	assert.Equal(t, 1, p.Len(), "only job b's series is left")
	got = p.Due(31*sec, nil)
	assert.Equal(t, []PeakPoint{{JobID: "b", Rank: 1, HiddenBytes: 8 * gib, DeviceUsedBytes: 9 * gib}}, got)
}

func TestHiddenPeaksZeroIntervalReportsEveryCall(t *testing.T) {
	p := NewHiddenPeaks(0)
	for i := range int64(3) {
		p.Observe("j", 0, (i+2)*gib, gib, 0)
		got := p.Due(i*sec+1, nil)
		require.Len(t, got, 1)
		assert.Equal(t, (i+1)*gib, got[0].HiddenBytes)
	}
}

func TestAppendPeakMetrics(t *testing.T) {
	const n = 1767225610000000000
	want, err := golden.ReadMetrics(filepath.Join("testdata", "metrics_peaks.yaml"))
	require.NoError(t, err)
	got := pmetric.NewMetrics()
	testMetrics().Append(got, nil, []PeakPoint{
		{JobID: "job-a", Rank: 0, HiddenBytes: 3 * gib, DeviceUsedBytes: 70 * gib, DeviceTotalBytes: 80 * gib},
		{JobID: "job-a", Rank: 1, HiddenBytes: -1 << 20, DeviceUsedBytes: 10 * gib},
		{JobID: "job-b", Rank: 3, HiddenBytes: 0, DeviceUsedBytes: gib},
	}, nil, nil, nil, n)
	require.NoError(t, pmetrictest.CompareMetrics(want, got, pmetrictest.IgnoreMetricsOrder()))
}

// TestHiddenPeaksEndedSeriesStartsAnew: a job that ends while its series
// is the one Observe found last, then sends again under the same id, gets
// a new series, held and reported like any other.
func TestHiddenPeaksEndedSeriesStartsAnew(t *testing.T) {
	p := NewHiddenPeaks(30 * sec)
	p.Observe("a", 1, 4*gib, gib, 0)
	require.Len(t, p.Due(sec, []string{"a"}), 1)
	require.Equal(t, 0, p.Len())

	p.Observe("a", 1, 6*gib, gib, 0)
	assert.Equal(t, 1, p.Len(), "the new sample is held in a series of its own")
	assert.Equal(t, []PeakPoint{{JobID: "a", Rank: 1, HiddenBytes: 5 * gib, DeviceUsedBytes: 6 * gib}}, p.Due(2*sec, nil))
}

// TestHiddenPeaksFollowEveryRank: observations that alternate between jobs
// and ranks (indexed and not: negative, past MaxIndexedRank), with jobs
// ending between reports, are reported as a plain per-(job, rank)
// account of them has it: the peaks since the last report, and the newest
// total the series learned since it began.
func TestHiddenPeaksFollowEveryRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	p := NewHiddenPeaks(0)
	pending, totals, live := map[RankKey]PeakPoint{}, map[RankKey]int64{}, map[RankKey]bool{}
	jobs := []string{"a", "b", "c"}
	ranks := []int64{0, 1, 2, 5, 63, -1, MaxIndexedRank - 1, MaxIndexedRank, 1 << 40}
	for round := range 300 {
		for range rng.IntN(40) {
			job, rank := jobs[rng.IntN(len(jobs))], ranks[rng.IntN(len(ranks))]
			hidden, used, total := rng.Int64N(10*gib)-gib, rng.Int64N(80*gib), rng.Int64N(3)*40*gib
			p.ObserveMax(job, rank, hidden, used, total)
			k := RankKey{job, rank}
			live[k] = true
			w, ok := pending[k]
			if !ok {
				w = PeakPoint{JobID: job, Rank: rank, HiddenBytes: hidden, DeviceUsedBytes: used}
			}
			w.HiddenBytes, w.DeviceUsedBytes = max(w.HiddenBytes, hidden), max(w.DeviceUsedBytes, used)
			if total > 0 {
				totals[k] = total
			}
			w.DeviceTotalBytes = totals[k]
			pending[k] = w
		}
		var ending []string
		if rng.IntN(4) == 0 {
			ending = []string{jobs[rng.IntN(len(jobs))]}
		}
		want := slices.SortedFunc(maps.Values(pending), func(a, b PeakPoint) int {
			return cmp.Or(strings.Compare(a.JobID, b.JobID), cmp.Compare(a.Rank, b.Rank))
		})
		got := p.Due(int64(round+1)*sec, ending)
		require.Equal(t, len(want), len(got), "round %d", round)
		if len(got) > 0 {
			require.Equal(t, want, got, "round %d", round)
		}
		clear(pending)
		ended := func(k RankKey, _ bool) bool { return slices.Contains(ending, k.Job) }
		maps.DeleteFunc(live, ended)
		maps.DeleteFunc(totals, func(k RankKey, _ int64) bool { return ended(k, true) })
		require.Equal(t, len(live), p.Len(), "round %d", round)
	}
}
