package collectiveattrprocessor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/store"
)

// bufferSizes returns, under the lock, the tracked jobs, the largest rank
// count of a job, the largest rank buffer and the total buffered entries.
func bufferSizes(c *core) (jobs, maxRanks, maxRankLen, events int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	jobs, _, _ = c.store.Sizes()
	c.store.EachJob(func(id string) {
		ranks := 0
		c.store.EachRank(id, func(_ int64, v store.RankView) {
			ranks++
			maxRankLen = max(maxRankLen, v.Len)
			events += v.Len
		})
		maxRanks = max(maxRanks, ranks)
	})
	return jobs, maxRanks, maxRankLen, events
}

// startBounded starts the three pipelines of one component with the
// default config changed by set; they are shut down, and their telemetry
// after them, when the test ends.
func startBounded(t *testing.T, set func(*Config)) (*pipelines, *componenttest.Telemetry) {
	t.Helper()
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	cfg := createDefaultConfig().(*Config)
	set(cfg)
	p := newPipelines(t, cfg, tel)
	t.Cleanup(func() { p.shutdown(t) })
	return p, tel
}

// assertEvicted checks the events_evicted counter: n under bound, and no
// other bound.
func assertEvicted(t *testing.T, tel *componenttest.Telemetry, bound string, n int64) {
	t.Helper()
	metadatatest.AssertEqualProcessorCollectiveattrEventsEvicted(t, tel, []metricdata.DataPoint[int64]{{
		Attributes: attribute.NewSet(attribute.String("bound", bound)),
		Value:      n,
	}}, metricdatatest.IgnoreTimestamp())
}

// TestFloodStaysWithinLimits floods the processor with more jobs, ranks and
// events than the limits allow: what is tracked stays at the limits, new jobs
// and ranks are rejected and counted, full ranks evict their oldest events
// and count them.
func TestFloodStaysWithinLimits(t *testing.T) {
	p, tel := startBounded(t, func(cfg *Config) {
		cfg.Limits = LimitsConfig{MaxJobs: 5, MaxRanksPerJob: 4, MaxEventsPerRank: 50}
	})

	const jobs, ranks, perRank = 20, 10, 100
	now := time.Now().UnixNano()
	for j := range jobs {
		var lines []string
		for i := range int64(perRank) {
			for r := range int64(ranks) {
				lines = append(lines, stormlogLine(fmt.Sprintf("job-%02d", j), r, ranks, now-int64(time.Second)+i*int64(time.Millisecond), "sample", baselineGap(i)))
			}
		}
		require.NoError(t, p.logs.ConsumeLogs(context.Background(), stormlogLogs(lines)))
	}

	gotJobs, maxRanks, maxRankLen, events := bufferSizes(p.core)
	assert.Equal(t, 5, gotJobs)
	assert.Equal(t, 4, maxRanks)
	assert.Equal(t, 50, maxRankLen)
	assert.Equal(t, 5*4*50, events)

	accepted := int64(5 * 4 * perRank)
	metadatatest.AssertEqualProcessorCollectiveattrItemsSkipped(t, tel, []metricdata.DataPoint[int64]{{
		Attributes: attribute.NewSet(attribute.String("reason", "over_limit"), attribute.String("signal", "logs")),
		Value:      jobs*ranks*perRank - accepted,
	}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorCollectiveattrItemsConverted(t, tel, []metricdata.DataPoint[int64]{{
		Attributes: attribute.NewSet(attribute.String("signal", "logs")),
		Value:      accepted,
	}}, metricdatatest.IgnoreTimestamp())
	assertEvicted(t, tel, "max_events_per_rank", accepted-5*4*50)
	metadatatest.AssertEqualProcessorCollectiveattrJobsTracked(t, tel, []metricdata.DataPoint[int64]{{Value: 5}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorCollectiveattrRanksTracked(t, tel, []metricdata.DataPoint[int64]{{Value: 20}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorCollectiveattrEventsBuffered(t, tel, []metricdata.DataPoint[int64]{{Value: 1000}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorCollectiveattrJobsLimit(t, tel, []metricdata.DataPoint[int64]{{Value: 5}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorCollectiveattrRanksPerJobLimit(t, tel, []metricdata.DataPoint[int64]{{Value: 4}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorCollectiveattrEventsPerRankLimit(t, tel, []metricdata.DataPoint[int64]{{Value: 50}}, metricdatatest.IgnoreTimestamp())
}

// TestFloodOfOneRankKeepsItsBufferAtCap: one rank sending far more than
// max_events_per_rank keeps exactly the newest max_events_per_rank.
func TestFloodOfOneRankKeepsItsBufferAtCap(t *testing.T) {
	p, tel := startBounded(t, func(cfg *Config) {
		cfg.Limits.MaxEventsPerRank = 64
	})

	now := time.Now().UnixNano()
	const n = 5000
	for batch := range int64(n / 500) {
		var lines []string
		for i := batch * 500; i < (batch+1)*500; i++ {
			lines = append(lines, stormlogLine("one", 0, 1, now-int64(time.Second)+i*int64(time.Microsecond), "sample", baselineGap(i)))
		}
		require.NoError(t, p.logs.ConsumeLogs(context.Background(), stormlogLogs(lines)))
		_, _, maxRankLen, _ := bufferSizes(p.core)
		require.LessOrEqual(t, maxRankLen, 64)
	}
	c := p.core
	c.mu.Lock()
	rb, _ := c.store.InspectRank("one", 0)
	c.mu.Unlock()
	require.Len(t, rb.SampleTimesNs, 64)
	assert.Equal(t, now-int64(time.Second)+(n-64)*int64(time.Microsecond), rb.SampleTimesNs[0], "the newest are kept")
	assert.LessOrEqual(t, rb.SampleCapacity, 64, "storage never grows past the cap")
	assertEvicted(t, tel, "max_events_per_rank", n-64)
}

// TestWindowEvictsOldEvents: events older than the job's newest event minus
// window are pushed out and counted under bound "window".
func TestWindowEvictsOldEvents(t *testing.T) {
	p, tel := startBounded(t, func(cfg *Config) {
		cfg.Window = time.Minute
	})

	now := time.Now().UnixNano()
	var lines []string
	// One sample every 10 s over 10 minutes, in time order.
	for i := range int64(60) {
		lines = append(lines, stormlogLine("w", 0, 1, now-10*int64(time.Minute)+i*10*int64(time.Second), "sample", baselineGap(i)))
	}
	require.NoError(t, p.logs.ConsumeLogs(context.Background(), stormlogLogs(lines)))
	_, _, maxRankLen, _ := bufferSizes(p.core)
	assert.Equal(t, 7, maxRankLen, "the newest sample and the six within the minute before it")
	assertEvicted(t, tel, "window", 53)
}

// TestFullRankEvictsPastTheWindowFirst: the trim on push is lazy, so a full
// rank can still hold entries behind the window; making room drops those
// first and counts them under "window", not "max_events_per_rank".
func TestFullRankEvictsPastTheWindowFirst(t *testing.T) {
	p, tel := startBounded(t, func(cfg *Config) {
		cfg.Window = time.Minute // trim slack: 1.875 s
		cfg.Limits.MaxEventsPerRank = 10
	})

	base := time.Now().Add(-2*time.Minute).UnixNano() / int64(time.Second) * int64(time.Second)
	var lines []string
	for i := range int64(10) { // 0 .. 0.9 s: the rank is full
		lines = append(lines, stormlogLine("w", 0, 1, base+i*100*int64(time.Millisecond), "sample", baselineGap(i)))
	}
	// 60.5 s: the first five (0 .. 0.4 s) leave the window, by less than
	// the slack, so only making room removes them.
	lines = append(lines, stormlogLine("w", 0, 1, base+60500*int64(time.Millisecond), "sample", baselineGap(10)))
	require.NoError(t, p.logs.ConsumeLogs(context.Background(), stormlogLogs(lines)))

	_, _, maxRankLen, _ := bufferSizes(p.core)
	assert.Equal(t, 6, maxRankLen)
	assertEvicted(t, tel, "window", 5)
}

// TestMarkerSpanAcrossTheWindowEdge: a marker span whose start is older than
// the window but whose end is not keeps its end marker (linked to the span)
// and counts the start as stale.
func TestMarkerSpanAcrossTheWindowEdge(t *testing.T) {
	p, tel := startBounded(t, func(cfg *Config) {
		cfg.Window = time.Minute
	})

	base := time.Now().Add(-2*time.Minute).UnixNano() / int64(time.Second) * int64(time.Second)
	// The job's newest event is at base + 70 s: the window starts at 10 s.
	require.NoError(t, p.logs.ConsumeLogs(context.Background(), stormlogLogs([]string{
		stormlogLine("edge", 0, 1, base+70*int64(time.Second), "sample", baselineGap(0)),
	})))
	td := markerSpanTraces("edge", 0, 2, base+5*int64(time.Second), base+15*int64(time.Second))
	require.NoError(t, p.traces.ConsumeTraces(context.Background(), td))

	c := p.core
	c.mu.Lock()
	rb, _ := c.store.InspectRank("edge", 0)
	c.mu.Unlock()
	require.Len(t, rb.Markers, 1)
	m := rb.Markers[0]
	assert.Equal(t, base+15*int64(time.Second), m.TimestampNs)
	require.True(t, m.HasRef)
	assert.Equal(t, ingest.SpanRef{TraceID: [16]byte{1}, SpanID: [8]byte{2}}, m.Ref)
	metadatatest.AssertEqualProcessorCollectiveattrItemsSkipped(t, tel, []metricdata.DataPoint[int64]{{
		Attributes: attribute.NewSet(attribute.String("reason", "stale"), attribute.String("signal", "traces")),
		Value:      1,
	}}, metricdatatest.IgnoreTimestamp())
}

// sampleTimes returns, under the lock, the times of the samples buffered
// for (job, rank), oldest first.
func sampleTimes(c *core, job string, rank int64) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	rb, _ := c.store.InspectRank(job, rank)
	return rb.SampleTimesNs
}

// samplesMetrics is one batch of device-used and allocator-reserved gauges
// of one rank, a point of each at every time.
func samplesMetrics(job string, rank int64, times ...int64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	if err := rm.Resource().Attributes().FromRaw(rankAttrs(job, rank, 8)); err != nil {
		panic(err)
	}
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	for _, name := range []string{"gpu.memory.device.used", "gpu.memory.allocator.reserved"} {
		m := ms.AppendEmpty()
		m.SetName(name)
		m.SetUnit("By")
		dps := m.SetEmptyGauge().DataPoints()
		for i, ts := range times {
			dp := dps.AppendEmpty()
			dp.SetTimestamp(pcommon.Timestamp(ts))
			dp.SetIntValue(baselineGap(int64(i)) + 8*mib)
		}
	}
	return md
}

// TestSamplesFromMetricsAreBoundedOneByOne: the samples a batch forms for
// a rank are checked against the window and the limits one by one, as
// records of their own: the stale ones are skipped and the rest buffered,
// and each sample of a rank over max_ranks_per_job is skipped.
func TestSamplesFromMetricsAreBoundedOneByOne(t *testing.T) {
	p, tel := startBounded(t, func(cfg *Config) {
		cfg.Window = time.Minute
		cfg.Limits.MaxRanksPerJob = 1
	})
	base := time.Now().Add(-2*time.Minute).UnixNano() / int64(time.Second) * int64(time.Second)
	sec := int64(time.Second)
	// The job's newest event is at base + 70 s: the window starts at 10 s.
	require.NoError(t, p.logs.ConsumeLogs(context.Background(), stormlogLogs([]string{
		stormlogLine("w", 0, 8, base+70*sec, "sample", baselineGap(0)),
	})))
	require.NoError(t, p.metrics.ConsumeMetrics(context.Background(), samplesMetrics("w", 0, base+5*sec, base+8*sec, base+20*sec, base+75*sec)))
	require.NoError(t, p.metrics.ConsumeMetrics(context.Background(), samplesMetrics("w", 1, base+71*sec, base+72*sec, base+73*sec)))

	c := p.core
	assert.Equal(t, []int64{base + 70*sec, base + 20*sec, base + 75*sec}, sampleTimes(c, "w", 0))
	c.mu.Lock()
	jv, _ := c.store.InspectJob("w")
	c.mu.Unlock()
	ranks, newest := jv.Ranks, jv.NewestNs
	assert.Equal(t, 1, ranks)
	assert.Equal(t, base+75*sec, newest)
	metadatatest.AssertEqualProcessorCollectiveattrItemsSkipped(t, tel, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("reason", "stale"), attribute.String("signal", "metrics")), Value: 2},
		{Attributes: attribute.NewSet(attribute.String("reason", "over_limit"), attribute.String("signal", "metrics")), Value: 3},
	}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorCollectiveattrItemsConverted(t, tel, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("signal", "logs")), Value: 1},
		{Attributes: attribute.NewSet(attribute.String("signal", "metrics")), Value: 2},
	}, metricdatatest.IgnoreTimestamp())
}

// TestSamplesFromMetricsOnAFullRank: a batch forming more samples than the
// rank has room for keeps the newest max_events_per_rank and counts the
// rest as evicted by that bound.
func TestSamplesFromMetricsOnAFullRank(t *testing.T) {
	p, tel := startBounded(t, func(cfg *Config) {
		cfg.Limits.MaxEventsPerRank = 4
	})
	base := time.Now().Add(-time.Minute).UnixNano() / int64(time.Second) * int64(time.Second)
	var times []int64
	for i := range int64(10) {
		times = append(times, base+i*int64(100*time.Millisecond))
	}
	require.NoError(t, p.metrics.ConsumeMetrics(context.Background(), samplesMetrics("full", 0, times...)))

	assert.Equal(t, times[6:], sampleTimes(p.core, "full", 0))
	assertEvicted(t, tel, "max_events_per_rank", 6)
	metadatatest.AssertEqualProcessorCollectiveattrItemsConverted(t, tel, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("signal", "metrics")), Value: 10},
	}, metricdatatest.IgnoreTimestamp())
}

// TestMarkerSpansOfABatch: a batch's marker spans are buffered per rank,
// each marker linked to its span, and counted one item per span; on a rank
// without room for them all, the oldest markers make room one by one.
func TestMarkerSpansOfABatch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		maxEvents int
		kept      int // markers kept of rank 0's eight
	}{
		{"room for all", 0, 8},
		{"full rank", 5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, tel := startBounded(t, func(cfg *Config) {
				if tc.maxEvents > 0 {
					cfg.Limits.MaxEventsPerRank = tc.maxEvents
				}
			})
			base := time.Now().Add(-time.Minute).UnixNano()
			td := ptrace.NewTraces()
			// Spans 1, 2 of rank 0, 11, 12 of rank 1, 3, 4 of rank 0 again,
			// each from its id in ms past base to 100 ns later.
			for _, res := range []struct {
				rank int64
				ids  []byte
			}{{0, []byte{1, 2}}, {1, []byte{11, 12}}, {0, []byte{3, 4}}} {
				rs := td.ResourceSpans().AppendEmpty()
				for _, id := range res.ids {
					start := base + int64(id)*int64(time.Millisecond)
					one := markerSpanTraces("m", res.rank, id, start, start+100).ResourceSpans().At(0)
					one.Resource().CopyTo(rs.Resource())
					one.ScopeSpans().At(0).Spans().At(0).CopyTo(rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty())
				}
			}
			require.NoError(t, p.traces.ConsumeTraces(context.Background(), td))

			type link struct {
				span byte
				ts   int64
			}
			c := p.core
			c.mu.Lock()
			links := map[int64][]link{}
			c.store.EachRank("m", func(rank int64, rb store.RankView) {
				for _, m := range rb.Markers {
					links[rank] = append(links[rank], link{m.Ref.SpanID[0], m.TimestampNs})
				}
			})
			c.mu.Unlock()
			span := func(ids ...byte) []link {
				var out []link
				for _, id := range ids {
					start := base + int64(id)*int64(time.Millisecond)
					out = append(out, link{id, start}, link{id, start + 100})
				}
				return out
			}
			assert.Equal(t, map[int64][]link{0: span(1, 2, 3, 4)[8-tc.kept:], 1: span(11, 12)}, links)
			metadatatest.AssertEqualProcessorCollectiveattrItemsConverted(t, tel, []metricdata.DataPoint[int64]{
				{Attributes: attribute.NewSet(attribute.String("signal", "traces")), Value: 6},
			}, metricdatatest.IgnoreTimestamp())
			metadatatest.AssertEqualProcessorCollectiveattrEventsBuffered(t, tel, []metricdata.DataPoint[int64]{{Value: int64(tc.kept + 4)}}, metricdatatest.IgnoreTimestamp())
		})
	}
}
