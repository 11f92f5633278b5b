package ingest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestHugeBatchPinsNoScratch: a batch far larger than usual goes through,
// and the per-call buffers it grew are not kept for the next call.
func TestHugeBatchPinsNoScratch(t *testing.T) {
	const t0 = int64(1767225600000000000)
	const n = 3 * maxKeptScratch
	c, _ := newTestConverter(Config{MaxPendingRows: 2 * n})
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("training.job.id", "j")
	rs.Resource().Attributes().PutInt("training.rank", 0)
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rs.Resource().CopyTo(rm.Resource())
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	var gauges []pmetric.NumberDataPointSlice
	for _, name := range []string{"gpu.memory.device.used", "gpu.memory.allocator.reserved"} {
		m := ms.AppendEmpty()
		m.SetName(name)
		gauges = append(gauges, m.SetEmptyGauge().DataPoints())
	}
	for i := range int64(n) {
		ts := pcommon.Timestamp(t0 + i*1000)
		sp := spans.AppendEmpty()
		sp.SetName("nccl:all_reduce")
		sp.SetSpanID(pcommon.SpanID{byte(i), byte(i >> 8)})
		sp.SetStartTimestamp(ts)
		sp.SetEndTimestamp(ts + 10)
		for _, dps := range gauges {
			dp := dps.AppendEmpty()
			dp.SetTimestamp(ts)
			dp.SetIntValue(1000)
		}
	}
	markers := convertTraces(t, c, td)
	require.Len(t, markers.records, 2*n)
	samples := convertMetrics(t, c, md)
	require.Len(t, samples.records, n)
	assert.Zero(t, cap(c.traces.markerTimes))
	assert.Zero(t, cap(c.traces.markerRun.Spans))
	assert.Zero(t, cap(c.metrics.run.Samples))
	for _, s := range c.metrics.series {
		assert.Zero(t, cap(s.batch))
	}
}
