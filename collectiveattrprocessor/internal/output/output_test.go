package output

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/plogtest"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
	"github.com/collectiveattr/collectiveattr/phase"
)

// seqIDs hands out aa..NN trace ids and bb..NN span ids in call order.
type seqIDs struct{ traces, spans byte }

func (s *seqIDs) TraceID() pcommon.TraceID {
	s.traces++
	return pcommon.TraceID{0xaa, 15: s.traces}
}

func (s *seqIDs) SpanID() pcommon.SpanID {
	s.spans++
	return pcommon.SpanID{0xbb, 7: s.spans}
}

func ptr[T any](v T) *T { return &v }

func ref(b byte) ingest.SpanRef {
	var r ingest.SpanRef
	for i := range r.TraceID {
		r.TraceID[i] = b
	}
	for i := range r.SpanID {
		r.SpanID[i] = b
	}
	return r
}

// testItems are the results the goldens were written for.
func testItems() []Item {
	return []Item{
		{
			JobID: "job-a", Host: "node-a", Preset: "medium",
			Result: &attribution.Result{
				Rank: 1, IntervalStartNs: 1767225600000000000, IntervalEndNs: 1767225600400000000,
				Classification: "collective_confident", Confidence: 1.0,
				ReasonCodes: []string{"allocator_device_divergence", "cross_rank_synchrony", "gap_spike_statistical_outlier", "marker_collective_token", "marker_spike_overlap"},
				Evidence: attribution.Evidence{MarkerHits: 2, SynchronizedRanks: 4, ExpectedWorldSize: 4, SynchronyRatio: 1.0,
					PeakGapBytes: 1600000000, PeakGapRatio: ptr(0.093132), RobustZscore: 3.1754},
				PhaseAttribution: &phase.Attribution{
					Resolution: "unique", Paths: []string{"train / allreduce"}, Source: ptr("thread_local"),
					Path: ptr("train / allreduce"), ScopeID: ptr("scope-1"), ThreadID: ptr(int64(11)), ThreadName: ptr("thread-11"),
				},
				MarkerTimesNs: []int64{1767225600100000000, 1767225600200000000},
			},
			Links: []ingest.SpanRef{ref(0x11), ref(0x22)},
		},
		{
			JobID: "job-b", Preset: "high",
			Result: &attribution.Result{
				Rank: 0, IntervalStartNs: 1767225601000000000, IntervalEndNs: 1767225601240000000,
				Classification: "collective_suspect", Confidence: 0.51,
				ReasonCodes: []string{"allocator_device_divergence", "cross_rank_synchrony", "gap_spike_statistical_outlier", "weak_marker_signal"},
				Evidence: attribution.Evidence{SynchronizedRanks: 3, ExpectedWorldSize: 3, SynchronyRatio: 1.0,
					PeakGapBytes: 300000000, RobustZscore: 2.4749},
				PhaseAttribution: &phase.Attribution{
					Resolution: "ambiguous", Paths: []string{"eval", "train"},
					Summary: &phase.Summary{PhasePath: "train", Source: "heuristic"},
				},
			},
		},
		{
			JobID: "job-a", Host: "node-b", Preset: "medium",
			Result: &attribution.Result{
				Rank: 2, IntervalStartNs: 1767225602000000000, IntervalEndNs: 1767225602300000000,
				Classification: "collective_likely", Confidence: 0.75,
				ReasonCodes: []string{"gap_spike_statistical_outlier", "marker_collective_token", "marker_spike_overlap"},
				Evidence: attribution.Evidence{MarkerHits: 1, SynchronizedRanks: 2, ExpectedWorldSize: 4, SynchronyRatio: 0.3333,
					PeakGapBytes: 200000000, PeakGapRatio: ptr(0.002328), RobustZscore: 2.6667},
			},
			Links: []ingest.SpanRef{ref(0x33)},
		},
	}
}

func TestAppendTraces(t *testing.T) {
	want, err := golden.ReadTraces(filepath.Join("testdata", "traces.yaml"))
	require.NoError(t, err)
	got := ptrace.NewTraces()
	AppendTraces(got, testItems(), &seqIDs{})
	require.NoError(t, ptracetest.CompareTraces(want, got))
}

func TestAppendTracesGroupsByResource(t *testing.T) {
	items := testItems()
	extra := items[0]
	r := *extra.Result
	r.Rank = 3
	extra.Result = &r
	extra.Links = nil
	items = append(items, extra)
	td := ptrace.NewTraces()
	existing := td.ResourceSpans().AppendEmpty() // what dst held before stays first
	AppendTraces(td, items, &seqIDs{})
	require.Equal(t, 4, td.ResourceSpans().Len())
	assert.Equal(t, 0, existing.ScopeSpans().Len())
	spans := td.ResourceSpans().At(1).ScopeSpans().At(0).Spans()
	require.Equal(t, 2, spans.Len(), "same job and host share a resource")
	rank, _ := spans.At(1).Attributes().Get(AttrRank)
	assert.Equal(t, int64(3), rank.Int())
	assert.Equal(t, pcommon.TraceID{0xaa, 15: 2}, spans.At(1).TraceID(), "no links: a fresh trace")
	assert.Equal(t, 0, spans.At(1).Links().Len())
}

func TestAppendTracesSortsReasonCodes(t *testing.T) {
	items := testItems()[:1]
	items[0].Result.ReasonCodes = []string{"marker_spike_overlap", "cross_rank_synchrony"}
	td := ptrace.NewTraces()
	AppendTraces(td, items, &seqIDs{})
	v, _ := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().Get(AttrReasonCodes)
	assert.Equal(t, []any{"cross_rank_synchrony", "marker_spike_overlap"}, v.Slice().AsRaw())
	assert.Equal(t, []string{"marker_spike_overlap", "cross_rank_synchrony"}, items[0].Result.ReasonCodes, "the item is not modified")
}

func TestAppendLogs(t *testing.T) {
	want, err := golden.ReadLogs(filepath.Join("testdata", "logs.yaml"))
	require.NoError(t, err)
	got := plog.NewLogs()
	AppendLogs(got, testItems(), true)
	require.NoError(t, plogtest.CompareLogs(want, got))
}

func TestAppendLogsWithoutPhases(t *testing.T) {
	ld := plog.NewLogs()
	items := testItems()
	AppendLogs(ld, items[2:], false)
	body := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().Str()
	assert.Equal(t, `{"rank":2,"interval_start_ns":1767225602000000000,"interval_end_ns":1767225602300000000,`+
		`"classification":"collective_likely","confidence":0.75,`+
		`"reason_codes":["gap_spike_statistical_outlier","marker_collective_token","marker_spike_overlap"],`+
		`"evidence":{"marker_hits":1,"synchronized_ranks":2,"expected_world_size":4,"synchrony_ratio":0.3333,`+
		`"peak_gap_bytes":200000000,"peak_gap_ratio":0.002328,"robust_zscore":2.6667},"job_id":"job-a"}`, body)
}

func TestResultBodyJobIDEscapedAndLast(t *testing.T) {
	it := testItems()[1]
	it.JobID = "a\"b\\c\né"
	body := AppendResultBody(nil, &it, true)
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	assert.Equal(t, "a\"b\\c\né", m["job_id"])
	assert.True(t, strings.HasSuffix(string(body), `,"job_id":"a\"b\\c\n\u00e9"}`))
}

func TestAppendMetrics(t *testing.T) {
	const (
		t1 = 1767225600000000000
		t2 = 1767225601000000000
		s  = 1767225500000000000
		tl = 1767225602000000000
		n  = 1767225610000000000
	)
	want, err := golden.ReadMetrics(filepath.Join("testdata", "metrics.yaml"))
	require.NoError(t, err)
	got := pmetric.NewMetrics()
	testMetrics().Append(got,
		[]HiddenPoint{{"job-a", 0, t1, 2147483648}, {"job-a", 1, t1, -1048576}, {"job-b", 0, t2, 0}},
		nil, nil,
		[]IntervalCount{{"job-a", 1, "collective_confident", 3, s, "", ""}, {"job-b", 0, "collective_suspect", 1, s, "", ""}, {"job-c", 5, "collective_likely", 2, s, "", ""}},
		[]LatestResult{{"job-a", 1, "collective_confident", 1600000000, 1.0, tl, "", ""}, {"job-b", 0, "collective_suspect", 300000000, 0.51, tl, "", ""}},
		n)
	require.NoError(t, pmetrictest.CompareMetrics(want, got, pmetrictest.IgnoreMetricsOrder()))
}

func TestAppendNothing(t *testing.T) {
	td, ld, md := ptrace.NewTraces(), plog.NewLogs(), pmetric.NewMetrics()
	AppendTraces(td, nil, &seqIDs{})
	AppendLogs(ld, nil, true)
	testMetrics().Append(md, nil, nil, nil, nil, nil, 1)
	assert.Equal(t, 0, td.ResourceSpans().Len())
	assert.Equal(t, 0, ld.ResourceLogs().Len())
	assert.Equal(t, 0, md.ResourceMetrics().Len())
}

func TestRandomIDSource(t *testing.T) {
	ids := NewRandomIDSource()
	seen := map[pcommon.SpanID]bool{}
	for range 1000 {
		tid, sid := ids.TraceID(), ids.SpanID()
		assert.False(t, tid.IsEmpty())
		assert.False(t, sid.IsEmpty())
		assert.False(t, seen[sid], "span ids repeat")
		seen[sid] = true
	}
}

func TestAppendTracesSkipsEmptyLinks(t *testing.T) {
	items := testItems()[:1]
	items[0].Links = []ingest.SpanRef{{}, ref(0x44)}
	td := ptrace.NewTraces()
	AppendTraces(td, items, &seqIDs{})
	sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	assert.Equal(t, pcommon.TraceID(ref(0x44).TraceID), sp.TraceID())
	require.Equal(t, 1, sp.Links().Len())
	assert.Equal(t, pcommon.SpanID(ref(0x44).SpanID), sp.Links().At(0).SpanID())

	items[0].Links = []ingest.SpanRef{{}}
	td = ptrace.NewTraces()
	AppendTraces(td, items, &seqIDs{})
	sp = td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	assert.Equal(t, pcommon.TraceID{0xaa, 15: 1}, sp.TraceID(), "only an empty link: a fresh trace")
	assert.Equal(t, 0, sp.Links().Len())
}

// The ledger's parts are one gauge with a part attribute, three points per
// rank at the rank's newest sample, in the job's resource.
func TestAppendMetricsLedger(t *testing.T) {
	md := pmetric.NewMetrics()
	testMetrics().Append(md, []HiddenPoint{{"job-a", 0, 5, 30}}, nil,
		[]LedgerPoint{{"job-a", 0, 7, 10, 15, 5}, {"job-b", 2, 9, 0, 40, -3}}, nil, nil, 11)
	require.Equal(t, 2, md.ResourceMetrics().Len())
	type point struct {
		job  string
		rank int64
		part string
		ts   int64
		v    int64
	}
	var got []point
	for i := range md.ResourceMetrics().Len() {
		ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			if m.Name() != "gpu.memory.hidden.usage" {
				continue
			}
			assert.Equal(t, "By", m.Unit())
			dps := m.Gauge().DataPoints()
			for k := range dps.Len() {
				dp := dps.At(k)
				job, _ := dp.Attributes().Get(AttrJobID)
				rank, _ := dp.Attributes().Get(AttrRank)
				part, _ := dp.Attributes().Get("gpu.memory.hidden.part")
				got = append(got, point{job.Str(), rank.Int(), part.Str(), int64(dp.Timestamp()), dp.IntValue()})
			}
		}
	}
	assert.Equal(t, []point{
		{"job-a", 0, "nccl", 7, 10}, {"job-a", 0, "context", 7, 15}, {"job-a", 0, "unexplained", 7, 5},
		{"job-b", 2, "nccl", 9, 0}, {"job-b", 2, "context", 9, 40}, {"job-b", 2, "unexplained", 9, -3},
	}, got)
}

// testScopeVersion is the collector version testMetrics' scope carries.
const testScopeVersion = "v9.9.9-test"

// testMetrics builds every result metric, as the default configuration
// does.
func testMetrics() *Metrics {
	set := processortest.NewNopSettings(metadata.Type)
	set.BuildInfo.Version = testScopeVersion
	return NewMetrics(metadata.NewDefaultMetricsBuilderConfig(), set)
}

// TestResultAttributeCountIsExact: the map of a result's attributes is
// allocated at the size it ends with (one more only when a phase
// attribution has no summary), for every shape of result the goldens hold
// and with each optional attribute absent.
func TestResultAttributeCountIsExact(t *testing.T) {
	items := append(testItems(), evidenceItems()...)
	noAccounting := evidenceItems()[0]
	noAccounting.Result.NCCLAccountedBytes = nil
	noSummary := testItems()[0]
	noSummary.Result.PhaseAttribution = &phase.Attribution{Resolution: "unresolved"}
	items = append(items, noAccounting, noSummary)
	for i := range items {
		r := items[i].Result
		m := pcommon.NewMap()
		putResultAttributes(m, &items[i])
		want := m.Len()
		if r.PhaseAttribution != nil && phase.Summarize(r.PhaseAttribution) == nil {
			want++
		}
		assert.Equal(t, want, resultAttributeCount(r), "item %d", i)
	}
}
