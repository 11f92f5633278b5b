package ingest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// trainerResource is the resource of rank 0's training process pid (-1:
// none) started at start ("": not sent), as the PyTorch instrumentation
// sends it.
func trainerResource(attrs pcommon.Map, pid int64, start string) {
	attrs.PutStr("training.job.id", "j")
	attrs.PutInt("training.rank", 0)
	attrs.PutInt("training.world_size", 2)
	attrs.PutStr("host.name", "node-a")
	attrs.PutStr("gpu.uuid", "GPU-0")
	if pid >= 0 {
		attrs.PutInt("process.pid", pid)
	}
	if start != "" {
		attrs.PutStr("process.creation.time", start)
	}
}

// gaugeAt appends a gauge of one point (bytes at second sec of the test's
// minute) to ms.
func gaugeAt(ms pmetric.MetricSlice, name string, sec, bytes int64) {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit("By")
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(pcommon.Timestamp(testNow.Add(-time.Minute).UnixNano() + sec*int64(time.Second)))
	dp.SetIntValue(bytes)
}

type runSession struct {
	session string
	first   int64
	n       int
}

// sampleSessions converts md and returns its runs' sessions.
func sampleSessions(t *testing.T, c *Converter, md pmetric.Metrics) []runSession {
	t.Helper()
	var out []runSession
	for r := range c.Metrics(md) {
		require.Nil(t, r.Skip, "no skip")
		if run := r.SampleRun; run != nil {
			out = append(out, runSession{run.Session, run.Samples[0].TimestampNs, len(run.Samples)})
		}
	}
	return out
}

// TestSampleSessionIsTheAllocatorProcess: a sample's session is the
// process that sent its allocator point (host/pid@start), not the one its
// device-used point came from: DCGM's points name the exporter's process.
// A restarted process (a new pid on the same job and rank) starts a new
// session, also within one batch; without a pid the job id stands in, as
// before; the same pid started again (a container restart) is a new
// session when the start time says so.
func TestSampleSessionIsTheAllocatorProcess(t *testing.T) {
	c, _ := newTestConverter(Config{})
	md := pmetric.NewMetrics()
	old := md.ResourceMetrics().AppendEmpty()
	trainerResource(old.Resource().Attributes(), 100, "2026-01-01T00:00:00Z")
	restarted := md.ResourceMetrics().AppendEmpty()
	trainerResource(restarted.Resource().Attributes(), 230, "2026-01-01T00:00:20Z")
	dcgm := md.ResourceMetrics().AppendEmpty()
	dcgm.Resource().Attributes().PutStr("host.name", "node-a")
	dcgm.Resource().Attributes().PutInt("process.pid", 7) // the exporter
	// The trainer's own points come first, so that DCGM's join its GPU.
	oldMs := old.ScopeMetrics().AppendEmpty().Metrics()
	newMs := restarted.ScopeMetrics().AppendEmpty().Metrics()
	dcgmMs := dcgm.ScopeMetrics().AppendEmpty().Metrics()
	for sec := int64(0); sec < 10; sec++ {
		if sec == 4 || sec == 5 {
			continue // the process is dead, DCGM still reads the GPU
		}
		ms := oldMs
		if sec > 5 {
			ms = newMs
		}
		gaugeAt(ms, "gpu.memory.allocator.reserved", sec, 1<<30)
	}
	for sec := int64(0); sec < 10; sec++ {
		m := dcgmMs.AppendEmpty()
		m.SetName("DCGM_FI_DEV_FB_USED")
		dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
		dp.SetTimestamp(pcommon.Timestamp(testNow.Add(-time.Minute).UnixNano() + sec*int64(time.Second)))
		dp.SetIntValue(2048)
		dp.Attributes().PutStr("UUID", "GPU-0")
		dp.Attributes().PutStr("Hostname", "node-a")
	}
	// The DCGM points of seconds 4 and 5 have no allocator partner: they
	// are given up once a later allocator point is seen.
	var sessions []runSession
	var unjoinable int
	for r := range c.Metrics(md) {
		if r.Skip != nil {
			assert.Equal(t, SkipUnjoinable, r.Skip.Reason)
			unjoinable++
		}
		if run := r.SampleRun; run != nil {
			sessions = append(sessions, runSession{run.Session, run.Samples[0].TimestampNs, len(run.Samples)})
		}
	}
	assert.Equal(t, 2, unjoinable)
	t0 := testNow.Add(-time.Minute).UnixNano()
	assert.Equal(t, []runSession{
		{"node-a/100@2026-01-01T00:00:00Z", t0, 4},
		{"node-a/230@2026-01-01T00:00:20Z", t0 + 6*int64(time.Second), 4},
	}, sessions)

	t.Run("no pid: the job", func(t *testing.T) {
		c, _ := newTestConverter(Config{})
		md := pmetric.NewMetrics()
		rm := md.ResourceMetrics().AppendEmpty()
		trainerResource(rm.Resource().Attributes(), -1, "")
		ms := rm.ScopeMetrics().AppendEmpty().Metrics()
		gaugeAt(ms, "gpu.memory.allocator.reserved", 1, 1<<30)
		gaugeAt(ms, "gpu.memory.device.used", 1, 2<<30)
		assert.Equal(t, []runSession{{"j", t0 + int64(time.Second), 1}}, sampleSessions(t, c, md))
	})
	t.Run("the same pid started again", func(t *testing.T) {
		c, _ := newTestConverter(Config{})
		var got []runSession
		for i, start := range []string{"", "", "2026-01-01T00:00:30Z"} {
			md := pmetric.NewMetrics()
			rm := md.ResourceMetrics().AppendEmpty()
			trainerResource(rm.Resource().Attributes(), 1, start)
			ms := rm.ScopeMetrics().AppendEmpty().Metrics()
			gaugeAt(ms, "gpu.memory.allocator.reserved", int64(i), 1<<30)
			gaugeAt(ms, "gpu.memory.device.used", int64(i), 2<<30)
			got = append(got, sampleSessions(t, c, md)...)
		}
		require.Len(t, got, 3)
		assert.Equal(t, "node-a/1", got[0].session)
		assert.Equal(t, got[0].session, got[1].session)
		assert.Equal(t, "node-a/1@2026-01-01T00:00:30Z", got[2].session)
	})
}

// TestSampleSessionTableStaysSmall: a rank whose points name a new
// process every batch (a pid that changes with every export) keeps a
// session table no larger than what its buffered rows refer to, and every
// sample still names its own process.
func TestSampleSessionTableStaysSmall(t *testing.T) {
	c, _ := newTestConverter(Config{})
	for i := range 600 {
		md := pmetric.NewMetrics()
		rm := md.ResourceMetrics().AppendEmpty()
		trainerResource(rm.Resource().Attributes(), int64(1000+i), "")
		ms := rm.ScopeMetrics().AppendEmpty().Metrics()
		gaugeAt(ms, "gpu.memory.allocator.reserved", 0, int64(i))
		gaugeAt(ms, "gpu.memory.device.used", 0, int64(2*i))
		// A batch every 50 ms.
		ts := pcommon.Timestamp(testNow.UnixNano() - int64(time.Minute) + int64(i)*int64(50*time.Millisecond))
		ms.At(0).Gauge().DataPoints().At(0).SetTimestamp(ts)
		ms.At(1).Gauge().DataPoints().At(0).SetTimestamp(ts)
		got := sampleSessions(t, c, md)
		require.Len(t, got, 1)
		require.Equal(t, "node-a/"+itoa(int64(1000+i)), got[0].session)
	}
	for _, s := range c.metrics.series {
		assert.LessOrEqual(t, len(s.sessions), compactSessionsAt+1)
	}
}

// TestPhaseSpanSessionIsTheSpansProcess: a phase span's session is the
// process of its resource, as its samples' are: one process is one
// session across signals.
func TestPhaseSpanSessionIsTheSpansProcess(t *testing.T) {
	c, _ := newTestConverter(Config{PhaseSpanNames: []string{"forward"}})
	td := ptrace.NewTraces()
	for _, pid := range []int64{100, -1} {
		rs := td.ResourceSpans().AppendEmpty()
		trainerResource(rs.Resource().Attributes(), pid, "")
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetName("forward")
		sp.SetTraceID(pcommon.TraceID{1})
		sp.SetSpanID(pcommon.SpanID{byte(pid)})
		sp.SetStartTimestamp(pcommon.Timestamp(testNow.Add(-time.Minute).UnixNano()))
		sp.SetEndTimestamp(pcommon.Timestamp(testNow.Add(-time.Minute).UnixNano() + 1000))
	}
	var sessions []string
	for r := range c.Traces(td) {
		require.Nil(t, r.Skip)
		if r.Record != nil && r.Record.Kind == KindPhaseSpan {
			sessions = append(sessions, r.Record.PhaseSpan.SessionID)
		}
	}
	assert.Equal(t, []string{"node-a/100", "j"}, sessions)
}
