package e2e

import (
	"context"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// Result names of the processor contract §5.
const (
	resultSpanName       = "collective_attribution"
	attrPrefix           = "collective_attribution."
	metricHidden         = "gpu.memory.hidden"
	metricHiddenPeak     = "gpu.memory.hidden.peak"
	metricDeviceUsedPeak = "gpu.memory.device.used.peak"
	metricDeviceLimit    = "gpu.memory.device.limit"
	metricIntervals      = "collective_attribution.intervals"
	metricAttributed     = "collective_attribution.attributed_bytes"
	metricConfidence     = "collective_attribution.confidence"
	attrJobID            = "training.job.id"
	attrRank             = "training.rank"
	attrClassification   = "collective_attribution.classification"
	classificationPrefix = "collective_"
)

var resultMetricNames = []string{metricHidden, metricHiddenPeak, metricDeviceUsedPeak, metricDeviceLimit, metricIntervals, metricAttributed, metricConfidence}

type spanKey struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

// TestSimulatedJobOverOTLP sends the default simulated job (16 ranks, injected collective
// spikes, a lazy-NCCL step up, unrelated single-rank spikes, clock skew, a late rank) over
// OTLP/HTTP as fast as the collector takes it and checks the results against the ground
// truth and the contract's output shapes.
func TestSimulatedJobOverOTLP(t *testing.T) {
	ports := freePorts(t, 3)
	httpPort, healthPort, telemetryPort := ports[0], ports[1], ports[2]
	out := t.TempDir()
	c := startCollector(t, filepath.Join(repoRoot(t), "testdata", "e2e", "otlp.yaml"), map[string]string{
		"E2E_OTLP_HTTP_PORT": itoa(httpPort), "E2E_HEALTH_PORT": itoa(healthPort),
		"E2E_TELEMETRY_PORT": itoa(telemetryPort), "E2E_OUT_DIR": out,
	}, healthPort)

	cfg := jobsim.DefaultConfig()
	s, err := jobsim.NewScenario(cfg)
	require.NoError(t, err)
	epoch := time.Now().Add(-cfg.Duration).Truncate(time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stats, err := s.Run(ctx, jobsim.Options{Epoch: epoch, OTLP: jobsim.NewOTLPSender("127.0.0.1:" + itoa(httpPort))})
	require.NoError(t, err)

	// on_settle emits while the collector runs (the whole job is settled 2 s of event time
	// before its end); the self-telemetry on the collector's Prometheus endpoint shows it.
	var telemetry string
	waitFor(t, time.Minute, "results_emitted in the collector's own metrics", func() bool {
		telemetry = scrape(t, "http://127.0.0.1:"+itoa(telemetryPort)+"/metrics")
		return strings.Contains(telemetry, "otelcol_processor_collectiveattr_results_emitted")
	})
	for _, m := range []string{"items_converted", "events_buffered", "jobs_tracked", "ranks_tracked", "evaluations"} {
		assert.Contains(t, telemetry, "otelcol_processor_collectiveattr_"+m, "self-telemetry")
	}
	took := c.stop()
	t.Logf("sent %d points and %d spans; collector shutdown took %s", stats.DataPoints, stats.Spans, took)
	assert.NotContains(t, c.log(), "panic")

	truth := s.Truth(epoch)
	td := readTraces(t, filepath.Join(out, "traces.json"))
	md := readMetrics(t, filepath.Join(out, "metrics.json"))

	results := checkResultSpans(t, td, truth, stats)
	verdict := jobsim.Compare(truth, results)
	if !verdict.OK {
		var b strings.Builder
		_ = verdict.WriteVerdict(&b, truth)
		t.Errorf("results do not match the injected ground truth:\n%s", b.String())
	}
	checkResultMetrics(t, md, results, stats)
	checkResultLogs(t, filepath.Join(out, "logs.json"), results)
}

// checkResultSpans checks pass-through and every result span's shape (contract §5.1) and
// returns the results they describe.
func checkResultSpans(t *testing.T, td ptrace.Traces, truth jobsim.Truth, stats jobsim.Stats) []jobsim.Result {
	t.Helper()
	ncclRank := map[spanKey]int64{}
	passed := 0
	type result struct {
		span ptrace.Span
		res  pcommon.Resource
	}
	var resultSpans []result
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				if sp.Name() == resultSpanName {
					resultSpans = append(resultSpans, result{sp, rs.Resource()})
					continue
				}
				passed++
				if strings.HasPrefix(sp.Name(), "nccl:") {
					r, _ := rs.Resource().Attributes().Get(attrRank)
					ncclRank[spanKey{sp.TraceID(), sp.SpanID()}] = r.Int()
				}
			}
		}
	}
	assert.Equal(t, stats.Spans, passed, "every input span passes through")
	require.NotEmpty(t, resultSpans, "result spans")

	hostOf := map[int64]string{}
	for _, r := range truth.Ranks {
		hostOf[int64(r.Rank)] = r.Host
	}
	var results []jobsim.Result
	linked := 0
	for _, rsp := range resultSpans {
		sp, res := rsp.span, rsp.res
		a := sp.Attributes()
		assert.Equal(t, ptrace.SpanKindInternal, sp.Kind())
		assertStr(t, res.Attributes(), "service.name", "collectiveattr")
		assertStr(t, res.Attributes(), attrJobID, truth.JobID)
		rank := intAttr(t, a, attrRank)
		if h, ok := res.Attributes().Get("host.name"); ok {
			assert.Equal(t, hostOf[rank], h.Str(), "host.name of rank %d", rank)
		}
		assert.Equal(t, int64(truth.WorldSize), intAttr(t, a, "training.world_size"))
		class := strAttr(t, a, attrClassification)
		assert.Contains(t, []string{"collective_confident", "collective_likely", "collective_suspect"}, class)
		conf := doubleAttr(t, a, attrPrefix+"confidence")
		assert.InDelta(t, math.Round(conf*1000)/1000, conf, 1e-12, "confidence has 3 decimals")
		assert.GreaterOrEqual(t, conf, 0.5, "medium preset drops confidence < 0.5")
		reasons := strSliceAttr(t, a, attrPrefix+"reason_codes")
		assert.True(t, slices.IsSorted(reasons), "reason codes sorted: %v", reasons)
		assert.Contains(t, reasons, "gap_spike_statistical_outlier")
		assertStr(t, a, attrPrefix+"preset", "medium")
		markerHits := intAttr(t, a, attrPrefix+"evidence.marker_hits")
		synced := intAttr(t, a, attrPrefix+"evidence.synchronized_ranks")
		assert.Equal(t, int64(truth.WorldSize), intAttr(t, a, attrPrefix+"evidence.expected_world_size"))
		assert.Greater(t, intAttr(t, a, attrPrefix+"evidence.peak_gap_bytes"), int64(128<<20))
		sync := doubleAttr(t, a, attrPrefix+"evidence.synchrony_ratio")
		assert.InDelta(t, float64(synced-1)/float64(truth.WorldSize-1), sync, 1e-4)
		assert.GreaterOrEqual(t, doubleAttr(t, a, attrPrefix+"evidence.robust_zscore"), 2.5)
		ratio := doubleAttr(t, a, attrPrefix+"evidence.peak_gap_ratio") // the simulator reports device totals
		assert.Greater(t, ratio, 0.0)
		if v, ok := a.Get(attrPrefix + "phase.resolution"); ok {
			assert.Contains(t, []string{"unique", "ambiguous"}, v.Str())
		}

		// Links: each contributing marker span is an NCCL span of the same rank that
		// passed through.
		for _, l := range sp.Links().All() {
			r, ok := ncclRank[spanKey{l.TraceID(), l.SpanID()}]
			if assert.True(t, ok, "link of rank %d result points at an NCCL span that passed through", rank) {
				assert.Equal(t, rank, r, "linked marker span belongs to the result's rank")
			}
		}
		if markerHits > 0 {
			assert.Positive(t, sp.Links().Len(), "result with %d marker hits has links", markerHits)
			linked++
		}
		results = append(results, jobsim.Result{
			JobID: truth.JobID, Rank: rank, StartNs: int64(sp.StartTimestamp()), EndNs: int64(sp.EndTimestamp()),
			Classification: class, Confidence: conf, Reasons: reasons,
		})
	}
	assert.Positive(t, linked, "some results link marker spans")
	return results
}

// checkResultMetrics checks metric pass-through and the result metrics of contract §5.2.
func checkResultMetrics(t *testing.T, md pmetric.Metrics, results []jobsim.Result, stats jobsim.Stats) {
	t.Helper()
	type point struct {
		rank int64
		ts   pcommon.Timestamp
	}
	used := map[point]int64{}
	reserved := map[point]int64{}
	hidden := map[point]int64{}
	passed := 0
	intervals := map[string]float64{} // rank/classification → last cumulative value
	confidence := map[int64]float64{}
	hiddenPeak := map[int64]int64{} // rank → highest gpu.memory.hidden.peak
	for _, rm := range md.ResourceMetrics().All() {
		resRank, hasResRank := rm.Resource().Attributes().Get(attrRank)
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if !slices.Contains(resultMetricNames, m.Name()) {
					passed += dataPointCount(m)
					if hasResRank && m.Type() == pmetric.MetricTypeGauge {
						for _, dp := range m.Gauge().DataPoints().All() {
							p := point{resRank.Int(), dp.Timestamp()}
							switch m.Name() {
							case jobsim.MetricDeviceUsed:
								used[p] = dp.IntValue()
							case jobsim.MetricAllocatorReserved:
								reserved[p] = dp.IntValue()
							}
						}
					}
					continue
				}
				switch m.Name() {
				case metricHidden:
					require.Equal(t, pmetric.MetricTypeGauge, m.Type())
					assert.Equal(t, "By", m.Unit())
					for _, dp := range m.Gauge().DataPoints().All() {
						hidden[point{rankOf(t, dp.Attributes(), rm.Resource()), dp.Timestamp()}] = pointValue(dp)
					}
				case metricIntervals:
					require.Equal(t, pmetric.MetricTypeSum, m.Type())
					assert.True(t, m.Sum().IsMonotonic())
					assert.Equal(t, pmetric.AggregationTemporalityCumulative, m.Sum().AggregationTemporality())
					for _, dp := range m.Sum().DataPoints().All() {
						k := itoa(int(rankOf(t, dp.Attributes(), rm.Resource()))) + "/" + strAttr(t, dp.Attributes(), attrClassification)
						v := float64(pointValue(dp))
						assert.GreaterOrEqual(t, v, intervals[k], "cumulative %s never decreases", k)
						intervals[k] = v
					}
				case metricConfidence:
					for _, dp := range m.Gauge().DataPoints().All() {
						confidence[rankOf(t, dp.Attributes(), rm.Resource())] = dp.DoubleValue()
					}
				case metricHiddenPeak:
					for _, dp := range m.Gauge().DataPoints().All() {
						r := rankOf(t, dp.Attributes(), rm.Resource())
						if v, ok := hiddenPeak[r]; !ok || pointValue(dp) > v {
							hiddenPeak[r] = pointValue(dp)
						}
					}
				}
			}
		}
	}
	assert.Equal(t, stats.DataPoints, passed, "every input data point passes through")

	// gpu.memory.hidden = device used − allocator reserved, at the sample's time.
	require.NotEmpty(t, hidden, metricHidden)
	// Each rank's reported peak is at least every hidden point of that rank.
	for p, v := range hidden {
		peak, ok := hiddenPeak[p.rank]
		require.True(t, ok, "rank %d has no %s", p.rank, metricHiddenPeak)
		assert.GreaterOrEqual(t, peak, v, "rank %d: %s below a %s point", p.rank, metricHiddenPeak, metricHidden)
	}
	checked := 0
	for p, h := range hidden {
		u, okU := used[p]
		r, okR := reserved[p]
		if okU && okR {
			assert.Equal(t, u-r, h, "hidden memory of rank %d at %s", p.rank, p.ts)
			checked++
		}
	}
	assert.Greater(t, checked, stats.DataPoints/7/2, "most hidden points match an input sample")

	// The interval counters add up to the emitted results.
	want := map[string]float64{}
	lastConf := map[int64]jobsim.Result{}
	for _, r := range results {
		want[itoa(int(r.Rank))+"/"+r.Classification]++
		if prev, ok := lastConf[r.Rank]; !ok || r.EndNs >= prev.EndNs {
			lastConf[r.Rank] = r
		}
	}
	assert.Equal(t, want, intervals, metricIntervals+" per rank and classification")
	for rank := range lastConf {
		_, ok := confidence[rank]
		assert.True(t, ok, "%s for rank %d", metricConfidence, rank)
	}
}

// checkResultLogs checks that the result log records (contract §5.3: the reference
// serialisation plus job_id) say what the result spans say.
func checkResultLogs(t *testing.T, path string, fromSpans []jobsim.Result) {
	t.Helper()
	fromLogs, err := jobsim.ReadResults(path)
	require.NoError(t, err)
	key := func(r jobsim.Result) string {
		return r.JobID + "/" + itoa(int(r.Rank)) + "/" + time.Unix(0, r.StartNs).UTC().Format(time.RFC3339Nano) + "/" + time.Unix(0, r.EndNs).UTC().Format(time.RFC3339Nano)
	}
	spans := map[string]jobsim.Result{}
	for _, r := range fromSpans {
		spans[key(r)] = r
	}
	require.Len(t, fromLogs, len(fromSpans), "one result log record per result span")
	for _, l := range fromLogs {
		s, ok := spans[key(l)]
		if assert.True(t, ok, "result log %s has a result span", key(l)) {
			assert.Equal(t, s.Classification, l.Classification)
			assert.Equal(t, s.Confidence, l.Confidence)
			assert.Equal(t, s.Reasons, l.Reasons)
		}
	}
}

func dataPointCount(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeSummary:
		return m.Summary().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().DataPoints().Len()
	}
	return 0
}

func pointValue(dp pmetric.NumberDataPoint) int64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeDouble {
		return int64(dp.DoubleValue())
	}
	return dp.IntValue()
}

// rankOf reads training.rank from a data point, else from its resource.
func rankOf(t *testing.T, a pcommon.Map, res pcommon.Resource) int64 {
	t.Helper()
	if v, ok := a.Get(attrRank); ok {
		return v.Int()
	}
	return intAttr(t, res.Attributes(), attrRank)
}

func intAttr(t *testing.T, a pcommon.Map, k string) int64 {
	t.Helper()
	v, ok := a.Get(k)
	if !assert.True(t, ok, "attribute %s", k) || !assert.Equal(t, pcommon.ValueTypeInt, v.Type(), "type of %s", k) {
		return -1
	}
	return v.Int()
}

func doubleAttr(t *testing.T, a pcommon.Map, k string) float64 {
	t.Helper()
	v, ok := a.Get(k)
	if !assert.True(t, ok, "attribute %s", k) || !assert.Equal(t, pcommon.ValueTypeDouble, v.Type(), "type of %s", k) {
		return math.NaN()
	}
	return v.Double()
}

func strAttr(t *testing.T, a pcommon.Map, k string) string {
	t.Helper()
	v, ok := a.Get(k)
	if !assert.True(t, ok, "attribute %s", k) || !assert.Equal(t, pcommon.ValueTypeStr, v.Type(), "type of %s", k) {
		return ""
	}
	return v.Str()
}

func assertStr(t *testing.T, a pcommon.Map, k, want string) {
	t.Helper()
	assert.Equal(t, want, strAttr(t, a, k), "attribute %s", k)
}

func strSliceAttr(t *testing.T, a pcommon.Map, k string) []string {
	t.Helper()
	v, ok := a.Get(k)
	if !assert.True(t, ok, "attribute %s", k) || !assert.Equal(t, pcommon.ValueTypeSlice, v.Type(), "type of %s", k) {
		return nil
	}
	var out []string
	for _, e := range v.Slice().All() {
		out = append(out, e.Str())
	}
	return out
}

// scrape returns a Prometheus text page ("" when it cannot be fetched yet).
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a loopback test client
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return ""
	}
	return string(b)
}
