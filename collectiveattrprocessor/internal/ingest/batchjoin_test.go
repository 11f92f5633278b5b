package ingest

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// TestJoinAfterExpiry: rows the pending TTL drops are gone for later
// batches, a late point of a new role brings its row back, and the rows
// kept are those the later batches' points still need.
func TestJoinAfterExpiry(t *testing.T) {
	const t0 = int64(1767225600000000000)
	ms := int64(time.Millisecond)
	c, clk := newTestConverter(Config{PendingTTL: time.Second})
	point := func(name string, ts int64) gaugePoint { return gaugePoint{name: name, ts: t0 + ts*ms, value: 1000} }
	batch := func(names []string, times ...int64) pmetric.Metrics {
		var pts []gaugePoint
		for _, name := range names {
			for _, ts := range times {
				pts = append(pts, point(name, ts))
			}
		}
		return gaugeBatch(rank0, pts...)
	}
	const usedName, reservedName, activeName = "gpu.memory.device.used", "gpu.memory.allocator.reserved", "gpu.memory.allocator.active"
	for _, step := range []struct {
		md      pmetric.Metrics
		advance time.Duration
	}{
		{batch([]string{usedName, reservedName}, 0, 40, 80, 120, 160), 600 * time.Millisecond},
		// A late point of a new role: the row at 40 ms arrives anew.
		{batch([]string{activeName}, 40), 700 * time.Millisecond},
		// Every row but the one at 40 ms has expired.
		{batch([]string{usedName, reservedName, activeName}, 100, 120), 0},
		{batch([]string{usedName, reservedName, activeName}, 200, 240), 0},
	} {
		convertMetrics(t, c, step.md)
		clk.advance(step.advance)
		c.Expire()
	}
	require.Len(t, c.metrics.series[seriesKey{job: "j", rank: 0}].rows, 5, "40, 100, 120, 200, 240 ms")
}

// TestJoinOnReadEqualsJoinAtEnd: a batch's points are buffered as they are
// read, unless the batch holds a per-process point, when they wait for the
// end of the call. Both ways give the same samples and skips: the same
// random batches (several ranks and roles, jittered, resent, out of order,
// over the row bound) are converted as they are, and with a per-process
// rank added to each, which sends every rank's points the second way.
func TestJoinOnReadEqualsJoinAtEnd(t *testing.T) {
	const t0 = int64(1767225600000000000)
	ms := int64(time.Millisecond)
	rng := rand.New(rand.NewPCG(23, 1))
	names := []string{"gpu.memory.device.used", "gpu.memory.allocator.reserved", "gpu.memory.device.free", "gpu.memory.device.total", "gpu.memory.allocator.allocated", "gpu.memory.allocator.active"}
	var batches []pmetric.Metrics
	for b := range 60 {
		md := pmetric.NewMetrics()
		for rank := range int64(3) {
			rm := md.ResourceMetrics().AppendEmpty()
			_ = rm.Resource().Attributes().FromRaw(map[string]any{"training.job.id": "j", "training.rank": rank})
			metrics := rm.ScopeMetrics().AppendEmpty().Metrics()
			var jitter [4]int64 // per collection, shared by its metrics mostly
			for i := range jitter {
				jitter[i] = rng.Int64N(30) * ms
			}
			for _, name := range names {
				if rng.IntN(6) == 0 {
					continue // a role missing from this batch
				}
				dps := metrics.AppendEmpty()
				dps.SetName(name)
				points := dps.SetEmptyGauge().DataPoints()
				for step := range int64(4) {
					ts := t0 + (int64(b)*400+step*100)*ms + jitter[step]
					switch rng.IntN(20) {
					case 0:
						ts -= 900 * ms // late or resent
					case 1:
						continue
					case 2, 3:
						ts += rng.Int64N(200) * ms // apart from its collection
					}
					dp := points.AppendEmpty()
					dp.SetTimestamp(pcommon.Timestamp(ts))
					v := 1<<30 + rng.Int64N(1<<20)
					if name == "gpu.memory.device.total" {
						v = 80 << 30
					}
					dp.SetIntValue(v)
				}
			}
		}
		batches = append(batches, md)
	}
	withProcessRank := func(md pmetric.Metrics, b int) pmetric.Metrics {
		out := pmetric.NewMetrics()
		md.CopyTo(out)
		rm := out.ResourceMetrics().AppendEmpty()
		_ = rm.Resource().Attributes().FromRaw(map[string]any{"training.job.id": "j", "training.rank": int64(9)})
		metrics := rm.ScopeMetrics().AppendEmpty().Metrics()
		ts := pcommon.Timestamp(t0 + int64(b)*400*ms)
		for _, name := range []string{"gpu.memory.process.used", "gpu.memory.allocator.reserved"} {
			m := metrics.AppendEmpty()
			m.SetName(name)
			dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
			dp.SetTimestamp(ts)
			dp.SetIntValue(1 << 30)
		}
		return out
	}
	onRead, _ := newTestConverter(Config{MaxPendingRows: 12})
	atEnd, _ := newTestConverter(Config{MaxPendingRows: 12})
	samples, reasons := 0, map[SkipReason]int{}
	for b, md := range batches {
		want := convertMetrics(t, onRead, md)
		got := convertMetrics(t, atEnd, withProcessRank(md, b))
		require.True(t, atEnd.metrics.series[seriesKey{job: "j", rank: 9}].perProcess)
		got.records = slices.DeleteFunc(got.records, func(r Record) bool { return r.Rank == 9 })
		require.Equal(t, len(want.records), len(got.records), "batch %d", b)
		if len(want.records) > 0 {
			require.Equal(t, want.records, got.records, "batch %d", b)
		}
		require.Equal(t, want.skips, got.skips, "batch %d", b)
		samples += len(want.records)
		for _, r := range want.reasons() {
			reasons[r]++
		}
	}
	require.Greater(t, samples, 400)
	t.Log(reasons)
	for _, r := range []SkipReason{SkipUnjoinable, SkipDuplicate, SkipOrphaned} {
		require.Positive(t, reasons[r], r)
	}
	require.Equal(t, onRead.Stats().UnjoinedPoints, atEnd.Stats().UnjoinedPoints)
	require.Positive(t, onRead.Stats().UnjoinedPoints, "some points were shed or late")
}
