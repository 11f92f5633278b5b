package metadata

import (
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

type hiddenPoint struct {
	ts   pcommon.Timestamp
	val  int64
	job  string
	rank int64
}

// TestGpuMemoryHiddenPointsEqualRecorded: the appender's points are the
// generated recorder's, byte for byte on the wire, in the order appended,
// whatever the start time, for several jobs (one the empty id), ranks
// (negative and past 2^32 as well), negative and zero values, over
// several emits (the builder reuses its buffers), and none when the metric
// is disabled.
func TestGpuMemoryHiddenPointsEqualRecorded(t *testing.T) {
	batches := [][]hiddenPoint{
		{{1767225600000000000, 1 << 30, "job-a", 0}, {1767225600100000000, -(3 << 20), "job-a", 0}, {1767225600000000000, 0, "job-a", 7}},
		{{5, -1, "", 3}, {6, 1 << 62, "", -2}, {7, 42, "llama-70b-pretrain-0042", 1 << 33}, {7, 43, "job-a", 511}, {8, -9, "", 3}},
		{},
		{{1767225610000000000, 2 << 30, "job-b", 16383}},
	}
	for _, tc := range []struct {
		name    string
		enabled bool
		start   pcommon.Timestamp
	}{
		{"enabled, start 0", true, 0},
		{"enabled, start set", true, 1767225500000000000},
		{"disabled", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultMetricsBuilderConfig()
			cfg.Metrics.GpuMemoryHidden.Enabled = tc.enabled
			recorded := NewMetricsBuilder(cfg, settings, WithStartTime(tc.start))
			appended := NewMetricsBuilder(cfg, settings, WithStartTime(tc.start))
			for _, batch := range batches {
				for _, p := range batch {
					recorded.RecordGpuMemoryHiddenDataPoint(p.ts, p.val, p.job, p.rank)
				}
				a, ok := appended.GpuMemoryHiddenPoints(len(batch))
				require.Equal(t, tc.enabled, ok)
				if ok {
					for _, p := range batch {
						a.Append(p.ts, p.val, p.job, p.rank)
					}
				}
				want, got := recorded.Emit(), appended.Emit()
				require.NoError(t, pmetrictest.CompareMetrics(want, got))
				var m pmetric.ProtoMarshaler
				wb, err := m.MarshalMetrics(want)
				require.NoError(t, err)
				gb, err := m.MarshalMetrics(got)
				require.NoError(t, err)
				assert.Equal(t, wb, gb)
				if !tc.enabled || len(batch) == 0 {
					assert.Zero(t, got.DataPointCount())
				} else {
					assert.Equal(t, len(batch), got.DataPointCount())
				}
			}
		})
	}
}
