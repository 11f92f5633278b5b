package pdatashift

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestShift(t *testing.T) {
	md := pmetric.NewMetrics()
	dp := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(100)
	Metrics(md, 5*time.Nanosecond)
	assert.Equal(t, pcommon.Timestamp(105), dp.Timestamp())

	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetStartTimestamp(10)
	sp.SetEndTimestamp(20)
	ev := sp.Events().AppendEmpty()
	ev.SetTimestamp(15)
	Traces(td, time.Second)
	assert.Equal(t, pcommon.Timestamp(10+time.Second), sp.StartTimestamp())
	assert.Equal(t, pcommon.Timestamp(20+time.Second), sp.EndTimestamp())
	assert.Equal(t, pcommon.Timestamp(15+time.Second), ev.Timestamp())
}
