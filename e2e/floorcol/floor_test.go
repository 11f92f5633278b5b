package floorcol

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor/processortest"
)

// rankMetrics is a resource of job and rank (no rank attribute when rank < 0) with the
// gauges named, each with points at times t0, t0+1, ... of values base+i.
func rankMetrics(md pmetric.Metrics, job string, rank int64, t0, n, base int64, names ...string) {
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr(jobAttr, job)
	if rank >= 0 {
		rm.Resource().Attributes().PutInt(rankAttr, rank)
	}
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	for _, name := range names {
		m := ms.AppendEmpty()
		m.SetName(name)
		dps := m.SetEmptyGauge().DataPoints()
		for i := range n {
			dp := dps.AppendEmpty()
			dp.SetTimestamp(pcommon.Timestamp(t0 + i))
			dp.SetIntValue(base + i)
		}
	}
}

func TestPassesEveryItemThroughUnchanged(t *testing.T) {
	md := pmetric.NewMetrics()
	rankMetrics(md, "j", 0, 100, 3, 10, usedName, reservedName, "gpu.memory.device.free")
	rankMetrics(md, "j", -1, 100, 2, 10, usedName)
	sum := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().AppendEmpty()
	sum.SetName(usedName)
	sum.SetEmptySum().DataPoints().AppendEmpty().SetDoubleValue(1.5)
	want, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
	require.NoError(t, err)

	sink := new(consumertest.MetricsSink)
	f := NewFactory()
	p, err := f.CreateMetrics(context.Background(), processortest.NewNopSettings(Type), f.CreateDefaultConfig(), sink)
	require.NoError(t, err)
	require.NoError(t, p.ConsumeMetrics(context.Background(), md))
	require.Len(t, sink.AllMetrics(), 1)
	got, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(sink.AllMetrics()[0])
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestRingHoldsTheNewestWindow(t *testing.T) {
	b := NewBuffer(&Config{Window: time.Second, SamplesPerSecond: 10})
	for batch := range int64(3) {
		md := pmetric.NewMetrics()
		// Two ranks interleaved with a third of another job of the same rank: the memo must
		// not carry one rank's points into another's rings.
		rankMetrics(md, "a", 0, batch*8, 8, 1000, usedName, reservedName, "gpu.memory.device.free")
		rankMetrics(md, "a", 1, batch*8, 8, 2000, usedName)
		rankMetrics(md, "a", 0, 100+batch, 1, 3000, reservedName)
		rankMetrics(md, "b", 0, batch*8, 8, 4000, reservedName)
		rankMetrics(md, "a", -1, 0, 5, 0, usedName)
		b.Add(md)
	}
	points := func(t0, n, base int64) []Point {
		var ps []Point
		for i := range n {
			ps = append(ps, Point{t0 + i, base + t0%8 + i})
		}
		return ps
	}
	// 24 points each pushed into rings of 10: the newest 10, oldest first.
	used, reserved, ok := b.Samples("a", 0)
	require.True(t, ok)
	require.Equal(t, []Point{{14, 1006}, {15, 1007}, {16, 1000}, {17, 1001}, {18, 1002}, {19, 1003}, {20, 1004}, {21, 1005}, {22, 1006}, {23, 1007}}, used)
	// The reserved ring of rank 0 took the later resource's point after each batch's 8.
	require.Len(t, reserved, 10)
	require.Equal(t, Point{102, 3000}, reserved[9])
	require.Equal(t, Point{101, 3000}, reserved[0])
	used, reserved, ok = b.Samples("a", 1)
	require.True(t, ok)
	require.Equal(t, points(16, 8, 2000), used[2:])
	require.Empty(t, reserved)
	used, reserved, ok = b.Samples("b", 0)
	require.True(t, ok)
	require.Empty(t, used)
	require.Len(t, reserved, 10)
	_, _, ok = b.Samples("a", 2)
	require.False(t, ok)
	require.Equal(t, 3, b.Skipped())
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, createDefaultConfig().(*Config).Validate())
	require.Error(t, (&Config{Window: 0, SamplesPerSecond: 10}).Validate())
	require.Error(t, (&Config{Window: time.Minute, SamplesPerSecond: 0}).Validate())
	require.Error(t, (&Config{Window: time.Millisecond, SamplesPerSecond: 10}).Validate())
}
