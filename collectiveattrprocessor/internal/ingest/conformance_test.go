package ingest

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/internal/conformance"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// sampleKey is what the attribution reads of a sample.
type sampleKey struct {
	rank, ts, used, reserved int64
	total, free              telemetry.OptInt
}

// TestConformanceSamplesThroughMetrics turns the samples of every public
// conformance case into the metrics an in-process exporter would send (one
// resource per rank, one gauge per field, the sample's timestamp on every
// point) and checks that the as-of join rebuilds exactly those samples, at
// the cases' real sampling intervals (tens of ms, below the tolerance).
func TestConformanceSamplesThroughMetrics(t *testing.T) {
	root, err := conformance.Root()
	require.NoError(t, err)
	cases, err := filepath.Glob(filepath.Join(root, "*", "*", "events.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, cases, "no conformance cases under %s", root)
	for _, path := range cases {
		name := filepath.Base(filepath.Dir(path))
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			events, err := telemetry.DecodeJSONL(data)
			if err != nil {
				t.Skip("case with an invalid record: ", err)
			}
			var want []sampleKey
			seen := map[[2]int64]bool{}
			for i := range events {
				e := &events[i]
				if !attribution.IsSample(e) {
					continue
				}
				if seen[[2]int64{e.Rank, e.TimestampNs}] {
					t.Skip("two samples of one rank at one nanosecond cannot be told apart as metrics")
				}
				seen[[2]int64{e.Rank, e.TimestampNs}] = true
				want = append(want, sampleKey{e.Rank, e.TimestampNs, e.DeviceUsedBytes.Value, e.AllocatorReservedBytes.Value, e.DeviceTotalBytes, e.DeviceFreeBytes})
			}
			c, clk := newTestConverter(Config{})
			clk.t = testNow.AddDate(1, 0, 0) // after every case's data
			var got collected
			c.metrics.convertMetrics(samplesAsMetrics(name, events), got.emitRun, got.skip)
			assert.Empty(t, got.skips)
			var have []sampleKey
			for _, r := range got.records {
				e := &r.Event
				have = append(have, sampleKey{r.Rank, r.TimestampNs, e.DeviceUsedBytes.Value, e.AllocatorReservedBytes.Value, e.DeviceTotalBytes, e.DeviceFreeBytes})
				assert.Equal(t, name, r.JobID)
			}
			order := func(a, b sampleKey) int { return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.ts, b.ts)) }
			slices.SortFunc(want, order)
			slices.SortFunc(have, order)
			assert.Equal(t, want, have)
		})
	}
}

func samplesAsMetrics(job string, events []telemetry.Event) pmetric.Metrics {
	md := pmetric.NewMetrics()
	byRank := map[int64]pmetric.MetricSlice{}
	gauges := map[int64]map[string]pmetric.NumberDataPointSlice{}
	for i := range events {
		e := &events[i]
		if !attribution.IsSample(e) {
			continue
		}
		ms, ok := byRank[e.Rank]
		if !ok {
			rm := md.ResourceMetrics().AppendEmpty()
			a := rm.Resource().Attributes()
			a.PutStr("training.job.id", job)
			a.PutInt("training.rank", e.Rank)
			a.PutInt("training.world_size", e.WorldSize)
			ms = rm.ScopeMetrics().AppendEmpty().Metrics()
			byRank[e.Rank] = ms
			gauges[e.Rank] = map[string]pmetric.NumberDataPointSlice{}
		}
		put := func(name string, v telemetry.OptInt) {
			if !v.Valid {
				return
			}
			dps, ok := gauges[e.Rank][name]
			if !ok {
				m := ms.AppendEmpty()
				m.SetName(name)
				m.SetUnit("By")
				dps = m.SetEmptyGauge().DataPoints()
				gauges[e.Rank][name] = dps
			}
			dp := dps.AppendEmpty()
			dp.SetTimestamp(pcommon.Timestamp(e.TimestampNs))
			dp.SetIntValue(v.Value)
		}
		put("gpu.memory.device.used", e.DeviceUsedBytes)
		put("gpu.memory.device.free", e.DeviceFreeBytes)
		put("gpu.memory.device.total", e.DeviceTotalBytes)
		put("gpu.memory.allocator.reserved", e.AllocatorReservedBytes)
		put("gpu.memory.allocator.allocated", e.AllocatorAllocatedBytes)
	}
	return md
}
