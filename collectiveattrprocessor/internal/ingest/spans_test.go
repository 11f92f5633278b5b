package ingest

import (
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/phase"
)

func readTraces(t *testing.T, name string) ptrace.Traces {
	t.Helper()
	td, err := golden.ReadTraces(filepath.Join("testdata", "traces", name))
	require.NoError(t, err)
	return td
}

func convertTraces(t *testing.T, c *Converter, td ptrace.Traces) collected {
	t.Helper()
	var m ptrace.ProtoMarshaler
	before, err := m.MarshalTraces(td)
	require.NoError(t, err)
	var got collected
	got.collect(c.Traces(td))
	after, err := m.MarshalTraces(td)
	require.NoError(t, err)
	require.Equal(t, before, after, "input mutated")
	return got
}

func spanRef(t *testing.T, trace, span string) SpanRef {
	t.Helper()
	var r SpanRef
	tb, err := hex.DecodeString(trace)
	require.NoError(t, err)
	sb, err := hex.DecodeString(span)
	require.NoError(t, err)
	copy(r.TraceID[:], tb)
	copy(r.SpanID[:], sb)
	return r
}

func TestConvertTracesMarkers(t *testing.T) {
	c, _ := newTestConverter(Config{})
	got := convertTraces(t, c, readTraces(t, "markers.yaml"))
	const trace = "5b8efff798038103d269b633813fc60c"
	marker := func(span string, ts int64) Record {
		return Record{Kind: KindMarker, JobID: "job-m", Rank: 2, WorldSize: 4, Host: "node-m", TimestampNs: ts, Marker: spanRef(t, trace, span)}
	}
	want := []Record{
		marker("eee19b7ec3c1b174", 1767225600000000000),
		marker("eee19b7ec3c1b174", 1767225600005000000),
		marker("eee19b7ec3c1b174", 1767225600001000000),
		marker("eee19b7ec3c1b175", 1767225600100000000),
		marker("eee19b7ec3c1b175", 1767225600100000000),
		marker("eee19b7ec3c1b176", 1767225600200000000),
		marker("eee19b7ec3c1b176", 1767225600300000000),
		marker("eee19b7ec3c1b17a", 1767225600450000000),
	}
	ownJob := func(ts int64) Record {
		r := marker("eee19b7ec3c1b17b", ts)
		r.JobID = "allreduce-bench"
		return r
	}
	want = append(want, ownJob(1767225600500000000), ownJob(1767225600550000000))
	assert.Equal(t, want, got.records)
	assert.Equal(t, []SkipReason{SkipInvalidValue, SkipNoIdentity}, got.reasons())
}

func TestConvertTracesPhases(t *testing.T) {
	c, _ := newTestConverter(Config{PhaseSpanNames: []string{"train", "step", "forward", "backward", "allreduce"}})
	got := convertTraces(t, c, readTraces(t, "phases.yaml"))
	// ps is the phase span of trace (0x01, 0x02 or 0x03 in its first byte)
	// and span, whose walk left the batch at parent ("": it did not).
	ps := func(trace byte, scope, parent string, path []string, start, end, thread int64, threadName string) Record {
		ref := spanRef(t, "0002030405060708090a0b0c0d0e0f10", parent+strings.Repeat("0", 16-len(parent)))
		ref.TraceID[0] = trace
		return Record{
			Kind: KindPhaseSpan, JobID: "job-p", Rank: 0, WorldSize: 2, TimestampNs: end,
			PhaseSpan: phase.Span{
				SessionID: "job-p", Rank: 0, ThreadID: thread, ThreadName: threadName, ScopeID: scope,
				Path: path, StartNs: start, EndNs: end, Sequence: start,
			},
			PhaseTraceID: ref.TraceID, PhaseParentID: ref.SpanID,
		}
	}
	allreduce := spanRef(t, "0102030405060708090a0b0c0d0e0f10", "1000000000000007")
	want := []Record{
		ps(1, "1000000000000001", "", []string{"train"}, 1767225600000000000, 1767225610000000000, 0, ""),
		ps(1, "1000000000000002", "", []string{"train", "step"}, 1767225600100000000, 1767225601000000000, 7, "MainThread"),
		ps(1, "1000000000000003", "", []string{"train", "step", "forward"}, 1767225600100000000, 1767225600400000000, 0, ""),
		ps(1, "1000000000000006", "", []string{"train", "step", "backward"}, 1767225600400000000, 1767225600800000000, 0, ""),
		{Kind: KindMarker, JobID: "job-p", WorldSize: 2, TimestampNs: 1767225600800000000, Marker: allreduce},
		{Kind: KindMarker, JobID: "job-p", WorldSize: 2, TimestampNs: 1767225600900000000, Marker: allreduce},
		ps(1, "1000000000000007", "", []string{"train", "step", "allreduce"}, 1767225600800000000, 1767225600900000000, 0, ""),
		ps(2, "2000000000000001", "", []string{"eval", "validate"}, 1767225611000000000, 1767225612000000000, 0, ""),
		ps(2, "2000000000000002", "", []string{"warmup", "compile"}, 1767225611100000000, 1767225611200000000, 3, ""),
		ps(2, "2000000000000003", "", []string{"eval", "validate", "forward"}, 1767225611300000000, 1767225611400000000, 0, ""),
		// Its parent is in no batch yet: the path is the span's own name,
		// until the processor finds the parent.
		ps(3, "3000000000000001", "30000000000000ff", []string{"step"}, 1767225620000000000, 1767225621000000000, 0, ""),
	}
	assert.Equal(t, want, got.records)
	assert.Equal(t, []SkipReason{SkipInvalidValue}, got.reasons(), "the empty phase.path")
	assert.Zero(t, c.traces.spanIdx.len(), "the batch index is reset after the call")
}

func TestConvertTracesNoPhaseSpans(t *testing.T) {
	// With NoPhaseSpans neither phase.path nor phase_span_names make a
	// phase span, and an empty phase.path is no longer a bad one: only the
	// allreduce span's markers are left.
	c, _ := newTestConverter(Config{PhaseSpanNames: []string{"train", "step", "forward", "backward", "allreduce"}, NoPhaseSpans: true})
	got := convertTraces(t, c, readTraces(t, "phases.yaml"))
	var kinds []Kind
	for _, r := range got.records {
		kinds = append(kinds, r.Kind)
	}
	assert.Equal(t, []Kind{KindMarker, KindMarker}, kinds)
	assert.Empty(t, got.reasons())
}

func TestConvertTracesPhaseNamesOff(t *testing.T) {
	// Without phase_span_names only phase.path spans (and markers) count.
	c, _ := newTestConverter(Config{})
	got := convertTraces(t, c, readTraces(t, "phases.yaml"))
	var kinds []Kind
	for _, r := range got.records {
		kinds = append(kinds, r.Kind)
	}
	assert.Equal(t, []Kind{KindMarker, KindMarker, KindPhaseSpan, KindPhaseSpan}, kinds, "allreduce markers, validate, compile")
	assert.Equal(t, []SkipReason{SkipInvalidValue}, got.reasons())
	assert.Equal(t, []string{"eval", "validate"}, got.records[2].PhaseSpan.Path)
}

func TestConvertTracesSpanJoinsDeviceMapping(t *testing.T) {
	c, _ := newTestConverter(Config{})
	convertMetrics(t, c, readMetrics(t, "allocator_node_a.yaml")) // learns (node-a, 3) -> (job-a, 3)
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("host.name", "node-a")
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetName("ncclDevKernel_AllGather_RING_LL")
	sp.Attributes().PutInt("gpu.index", 3)
	sp.SetStartTimestamp(1767225600000000000)
	sp.SetEndTimestamp(1767225600000000000)
	got := convertTraces(t, c, td)
	require.Len(t, got.records, 2, "start and end")
	assert.Equal(t, "job-a", got.records[0].JobID)
	assert.Equal(t, int64(3), got.records[0].Rank)
	assert.Equal(t, int64(16), got.records[0].WorldSize)
}

// TestConvertTracesMarkerRuns: consecutive marker spans of one (job, rank)
// are handed over as one run, in input order; a span of another rank, or a
// phase span between them, starts a new run.
func TestConvertTracesMarkerRuns(t *testing.T) {
	const t0 = int64(1767225600000000000)
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("training.job.id", "j")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	add := func(id byte, name string, rank int64, events int) {
		sp := spans.AppendEmpty()
		sp.SetName(name)
		sp.SetSpanID(pcommon.SpanID{id})
		sp.SetStartTimestamp(pcommon.Timestamp(t0 + int64(id)*1000))
		sp.SetEndTimestamp(pcommon.Timestamp(t0 + int64(id)*1000 + 10))
		sp.Attributes().PutInt("training.rank", rank)
		for e := range events {
			ev := sp.Events().AppendEmpty()
			ev.SetName("nccl:all_reduce")
			ev.SetTimestamp(pcommon.Timestamp(t0 + int64(id)*1000 + 1 + int64(e)))
		}
	}
	add(1, "nccl:all_reduce", 0, 1)
	add(2, "nccl:all_gather", 1, 0)
	add(3, "forward", 1, 2) // its events only
	add(4, "nccl:broadcast", 0, 0)
	add(5, "train_step", 0, 0) // a phase span
	add(6, "nccl:reduce_scatter", 0, 0)

	c, _ := newTestConverter(Config{PhaseSpanNames: []string{"train_step"}})
	type span struct {
		id    byte
		times []int64
	}
	var runs [][]span
	var ranks []int64
	c.traces.convertTraces(td, func(r *Record) { ranks = append(ranks, -1) }, func(run *MarkerRun) {
		var got []span
		for _, sp := range run.Spans {
			got = append(got, span{sp.Ref.SpanID[0], slices.Clone(sp.TimesNs)})
		}
		runs = append(runs, got)
		ranks = append(ranks, run.Rank)
	}, func(s Skip) { t.Errorf("skip: %+v", s) })
	at := func(id byte, d ...int64) []int64 {
		var out []int64
		for _, x := range d {
			out = append(out, t0+int64(id)*1000+x)
		}
		return out
	}
	assert.Equal(t, [][]span{
		{{1, at(1, 0, 10, 1)}},
		{{2, at(2, 0, 10)}, {3, at(3, 1, 2)}},
		{{4, at(4, 0, 10)}},
		{{6, at(6, 0, 10)}},
	}, runs)
	assert.Equal(t, []int64{0, 1, 0, -1, 0}, ranks, "runs by rank, the phase span's record in its place")
}
