package collectiveattrprocessor

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/evidence"
)

// TestEvidenceMarkerSpanIdentity: in evidence mode a marker span is one
// marker from its start to its end, carrying the collective its nccl.*
// attributes name, read as evidence.MetadataMarker reads the same keys of
// a stormlog record's metadata: an attribute of the wrong type counts as
// absent, so a span whose communicator or sequence number is unusable is
// a bare marker, and a member list keeps its integer entries. Nothing of
// it is skipped, and it passes through intact.
func TestEvidenceMarkerSpanIdentity(t *testing.T) {
	now := time.Now().UnixNano()
	start, end := now-int64(time.Second), now-int64(time.Second)+int64(3*time.Millisecond)
	full := func(over map[string]any) map[string]any {
		m := map[string]any{
			"nccl.comm.id": "0xab", "nccl.seq": int64(7), "nccl.op": "all_reduce", "nccl.message_bytes": int64(1024),
			"nccl.comm.nranks": int64(2), "nccl.comm.ranks": []any{int64(1), int64(0)}, "nccl.peer": int64(1),
		}
		for k, v := range over {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	want := evidence.Collective{CommID: "0xab", Seq: 7, Op: "all_reduce", MessageBytes: 1024, NRanks: 2, Ranks: []int64{0, 1}}
	with := func(edit func(*evidence.Collective)) *evidence.Collective {
		c := want
		c.Ranks = append([]int64(nil), want.Ranks...)
		edit(&c)
		return &c
	}
	tests := []struct {
		name  string
		attrs map[string]any
		want  *evidence.Collective // nil: a bare marker
	}{
		{"every key", full(nil), &want},
		{"sequence number as an integral double", full(map[string]any{"nccl.seq": 7.0}), &want},
		{"sequence number as a string", full(map[string]any{"nccl.seq": "7"}), nil},
		{"fractional sequence number", full(map[string]any{"nccl.seq": 7.5}), nil},
		{"NaN sequence number", full(map[string]any{"nccl.seq": math.NaN()}), nil},
		{"sequence number past int64", full(map[string]any{"nccl.seq": 1e300}), nil},
		{"communicator of the wrong type", full(map[string]any{"nccl.comm.id": int64(171)}), nil},
		{"no sequence number", full(map[string]any{"nccl.seq": nil}), nil},
		{"op of the wrong type", full(map[string]any{"nccl.op": int64(3)}), with(func(c *evidence.Collective) { c.Op = "" })},
		{"negative message size", full(map[string]any{"nccl.message_bytes": int64(-5)}), with(func(c *evidence.Collective) { c.MessageBytes = 0 })},
		{"message size as a string", full(map[string]any{"nccl.message_bytes": "1024"}), with(func(c *evidence.Collective) { c.MessageBytes = 0 })},
		{"members with entries of the wrong type", full(map[string]any{"nccl.comm.ranks": []any{"a", int64(1), 2.5, int64(0), int64(1)}}), &want},
		{"members none of them integers", full(map[string]any{"nccl.comm.ranks": []any{"a"}}), with(func(c *evidence.Collective) { c.Ranks = []int64{} })},
		{"members not a list", full(map[string]any{"nccl.comm.ranks": "0,1"}), with(func(c *evidence.Collective) { c.Ranks = nil })},
		{"no identity at all", map[string]any{"kernel": "ncclDevKernel_AllReduce"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tel := componenttest.NewTelemetry()
			t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
			cfg := createDefaultConfig().(*Config)
			cfg.Mode = ModeEvidence
			p := newPipelines(t, cfg, tel)
			defer p.shutdown(t)
			in := identifiedMarkerSpan("j", start, end, tt.attrs)
			sent := ptrace.NewTraces()
			in.CopyTo(sent)
			require.NoError(t, p.traces.ConsumeTraces(context.Background(), in))
			assertSameProto(t, (&ptrace.ProtoMarshaler{}).MarshalTraces, sent, p.tsink.AllTraces()[0])

			p.core.mu.Lock()
			v, ok := p.core.store.InspectRank("j", 0)
			p.core.mu.Unlock()
			require.True(t, ok)
			require.Len(t, v.EvidenceMarkers, 1, "one marker: the span's interval")
			assert.Empty(t, v.Markers, "no reference markers in evidence mode")
			m := v.EvidenceMarkers[0]
			assert.Equal(t, [2]int64{start, end}, [2]int64{m.StartNs, m.EndNs})
			assert.True(t, m.HasRef)
			assert.Equal(t, tt.want, m.Collective)
		})
	}
}

// TestEvidenceSpanEventIdentity: a span event whose name matches a
// collective token is a marker at its time, with the identity its own
// attributes give; a span that names its collective is a marker span in
// evidence mode even when nothing in it matches a token, as a stormlog
// record with an identity is a marker.
func TestEvidenceSpanEventIdentity(t *testing.T) {
	now := time.Now().UnixNano()
	start := now - int64(time.Second)
	td := identifiedMarkerSpan("j", start, start+int64(time.Millisecond), map[string]any{})
	sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	sp.SetName("forward")
	// No attribute value matches a token ("send" does not): the span
	// itself is no marker span.
	ev := sp.Events().AppendEmpty()
	ev.SetName("ncclKernel launch")
	ev.SetTimestamp(pcommon.Timestamp(start + 10))
	require.NoError(t, ev.Attributes().FromRaw(map[string]any{"nccl.comm.id": "0xab", "nccl.seq": int64(3), "nccl.op": "send"}))
	step := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().AppendEmpty()
	step.SetName("optimizer_step")
	step.SetTraceID(pcommon.TraceID{2})
	step.SetSpanID(pcommon.SpanID{2})
	step.SetStartTimestamp(pcommon.Timestamp(start + 100))
	step.SetEndTimestamp(pcommon.Timestamp(start + 200))
	require.NoError(t, step.Attributes().FromRaw(map[string]any{"nccl.comm.id": "0xab", "nccl.seq": int64(4)}))

	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	cfg := createDefaultConfig().(*Config)
	cfg.Mode = ModeEvidence
	p := newPipelines(t, cfg, tel)
	defer p.shutdown(t)
	require.NoError(t, p.traces.ConsumeTraces(context.Background(), td))
	p.core.mu.Lock()
	v, ok := p.core.store.InspectRank("j", 0)
	p.core.mu.Unlock()
	require.True(t, ok)
	require.Len(t, v.EvidenceMarkers, 2)
	e, s := v.EvidenceMarkers[0], v.EvidenceMarkers[1]
	assert.Equal(t, [2]int64{start + 10, start + 10}, [2]int64{e.StartNs, e.EndNs}, "the event marks its own time")
	require.NotNil(t, e.Collective)
	assert.Equal(t, evidence.Collective{CommID: "0xab", Seq: 3, Op: "send"}, *e.Collective)
	assert.Equal(t, [2]int64{start + 100, start + 200}, [2]int64{s.StartNs, s.EndNs})
	require.NotNil(t, s.Collective)
	assert.Equal(t, int64(4), s.Collective.Seq)
	assert.NotEqual(t, e.Ref, s.Ref, "each marker keeps its own span")
}
