package metadata

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// GpuMemoryHiddenPoints appends gpu.memory.hidden points to the metric the
// MetricsBuilder is building: the same points RecordGpuMemoryHiddenDataPoint
// records, at less cost a point. The processor emits one per sample (tens of
// thousands a round), and the generated recorder grows each point's
// attributes twice and looks each key up before putting it; this sizes the
// points and the attributes once. The metric's name, unit, description and
// whether it is enabled stay the generated builder's (metadata.yaml);
// TestGpuMemoryHiddenPointsEqualRecorded pins the points to the recorder's.
type GpuMemoryHiddenPoints struct {
	dps   pmetric.NumberDataPointSlice
	start pcommon.Timestamp
}

// GpuMemoryHiddenPoints returns an appender with room for n more
// gpu.memory.hidden points, or false if the configuration disables the
// metric (then it records nothing).
func (mb *MetricsBuilder) GpuMemoryHiddenPoints(n int) (GpuMemoryHiddenPoints, bool) {
	m := &mb.metricGpuMemoryHidden
	if !m.config.Enabled {
		return GpuMemoryHiddenPoints{}, false
	}
	dps := m.data.Gauge().DataPoints()
	dps.EnsureCapacity(dps.Len() + n)
	return GpuMemoryHiddenPoints{dps: dps, start: mb.startTime}, true
}

// Append appends the point RecordGpuMemoryHiddenDataPoint(ts, val,
// jobIDAttributeValue, rankAttributeValue) records.
func (a GpuMemoryHiddenPoints) Append(ts pcommon.Timestamp, val int64, jobIDAttributeValue string, rankAttributeValue int64) {
	dp := a.dps.AppendEmpty()
	dp.SetStartTimestamp(a.start)
	dp.SetTimestamp(ts)
	dp.SetIntValue(val)
	attrs := dp.Attributes()
	attrs.EnsureCapacity(2)
	attrs.PutStr("training.job.id", jobIDAttributeValue)
	attrs.PutInt("training.rank", rankAttributeValue)
}
