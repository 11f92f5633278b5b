package ingest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// exporterBatch is one rank's batch in the in-process exporter's shape:
// device used, allocator reserved and device total, three collections.
func exporterBatch(t0 int64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	_ = rm.Resource().Attributes().FromRaw(rank0)
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	for _, name := range []string{"gpu.memory.device.used", "gpu.memory.allocator.reserved", "gpu.memory.device.total"} {
		m := ms.AppendEmpty()
		m.SetName(name)
		dps := m.SetEmptyGauge().DataPoints()
		for i := range int64(3) {
			dp := dps.AppendEmpty()
			dp.SetTimestamp(pcommon.Timestamp(t0 + i*100e6))
			dp.SetIntValue(1000 + 10*i)
		}
	}
	return md
}

// TestLockstepOnAFreshSeries: a rank's first batch, read in lockstep or
// left to the per-point path, gives what the row path gives. Together with
// TestZipJoinMatchesTheRowJoin (later batches of long-lived ranks) this
// covers what a zip block may and may not take.
func TestLockstepOnAFreshSeries(t *testing.T) {
	const t0 = int64(1767225600000000000)
	firstMetric := func(md pmetric.Metrics, k int) pmetric.NumberDataPointSlice {
		return md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(k).Gauge().DataPoints()
	}
	everyMetric := func(md pmetric.Metrics, f func(pmetric.NumberDataPointSlice)) {
		for k := range 3 {
			f(firstMetric(md, k))
		}
	}
	for _, tt := range []struct {
		name     string
		change   func(md pmetric.Metrics)
		lockstep bool
	}{
		{"as sent", func(pmetric.Metrics) {}, true},
		{"doubles", func(md pmetric.Metrics) { firstMetric(md, 1).At(2).SetDoubleValue(1020.4) }, true},
		{"first collection at time 0", func(md pmetric.Metrics) {
			everyMetric(md, func(dps pmetric.NumberDataPointSlice) { dps.At(0).SetTimestamp(0) })
		}, false},
		{"a collection repeated", func(md pmetric.Metrics) {
			everyMetric(md, func(dps pmetric.NumberDataPointSlice) { dps.At(1).SetTimestamp(dps.At(0).Timestamp()) })
		}, false},
		{"collections out of order", func(md pmetric.Metrics) {
			everyMetric(md, func(dps pmetric.NumberDataPointSlice) { dps.At(0).SetTimestamp(dps.At(2).Timestamp() + 1) })
		}, false},
		{"a staleness marker", func(md pmetric.Metrics) {
			firstMetric(md, 0).At(1).SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
		}, false},
		{"no allocator reserved", func(md pmetric.Metrics) {
			md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(1).SetName("other")
		}, false},
		{"a run one point short", func(md pmetric.Metrics) {
			firstMetric(md, 2).RemoveIf(func(dp pmetric.NumberDataPoint) bool { return dp.IntValue() == 1020 })
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			zip, _ := newTestConverter(Config{})
			rows, _ := newTestConverter(Config{})
			rows.noZip = true
			md := exporterBatch(t0)
			tt.change(md)
			want := convertMetrics(t, rows, md)
			got := convertMetrics(t, zip, md)
			require.Equal(t, want, got)
			require.Equal(t, snapshot(rows), snapshot(zip))
			require.Equal(t, tt.lockstep, zip.fast.lockstep == 1, "read in lockstep")
			if tt.lockstep {
				require.Len(t, got.records, 3)
			}
		})
	}
}
