package collectiveattrprocessor

import (
	"context"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// FuzzPipelines feeds OTLP metrics, traces and logs decoded from the fuzzer's
// bytes into the three pipelines of one component, twice, then shuts them
// down, which evaluates and emits every job: the core, the evaluation and
// the emission see whatever the converter lets through. Nothing may panic,
// and every input item must reach the next consumer first, unchanged in
// number. The spans go in two requests each time, each scope's later half
// first the first time and last the second, so that phase spans find their
// parents in other requests too, before and after them.
//
// The input is three length-prefixed parts (metrics, traces, logs), each
// decoded as an OTLP protobuf payload and skipped when it does not decode.
// The seeds are a small job with collective spikes: samples and markers as
// metrics and spans, phase spans named and with phase.path, and stormlog
// records with phase boundaries.
func FuzzPipelines(f *testing.F) {
	start := time.Now().Add(-time.Minute).UnixNano() / int64(time.Second) * int64(time.Second)
	md, _ := benchMetrics(start)
	td, _ := benchPhaseTraces(start)
	keepRanks := func(n int) {
		i := 0
		md.ResourceMetrics().RemoveIf(func(pmetric.ResourceMetrics) bool { i++; return i > n })
		i = 0
		td.ResourceSpans().RemoveIf(func(ptrace.ResourceSpans) bool { i++; return i > n })
	}
	keepRanks(4)
	// A collective spike on every rank at the sixth collection, a step start:
	// next to the step's NCCL spans and inside its forward phase span.
	for _, rm := range md.ResourceMetrics().All() {
		for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
			if m.Name() == "gpu.memory.device.used" {
				m.Gauge().DataPoints().At(5).SetIntValue(baseReserved + spikeGap)
			}
		}
	}
	traffic := jobTraffic{job: "fuzz-logs", ranks: 4, stepNs: int64(100 * time.Millisecond), spikes: []int64{start + int64(500*time.Millisecond)}}
	lines := traffic.lines(start, start+int64(time.Second))
	boundary := func(action string, ts int64) string {
		return `{"schema_version":3,"session_id":"fuzz-sess","timestamp_ns":` + strconv.FormatInt(ts, 10) + `,"event_type":"phase_` + action +
			`","collector":"stormlog.cuda_tracker","sampling_interval_ms":100,"pid":1,"host":"node-0","job_id":"fuzz-logs","rank":0,"local_rank":0,` +
			`"world_size":4,"device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":1,"allocator_active_bytes":null,` +
			`"allocator_inactive_bytes":null,"allocator_change_bytes":0,"device_used_bytes":1,"device_free_bytes":null,"device_total_bytes":null,` +
			`"context":null,"metadata":{"phase_scope":{"action":"` + action + `","name":"train","path":["train"],"depth":1,"scope_id":"fuzz-sess:1",` +
			`"parent_scope_id":null,"thread_id":7,"thread_name":"MainThread","sequence":1}}}`
	}
	lines = append(lines, boundary("enter", start+1), boundary("exit", start+int64(time.Second)-1))
	ld := stormlogLogs(lines)

	mb, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
	require.NoError(f, err)
	tb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(f, err)
	lb, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	require.NoError(f, err)
	f.Add(joinParts(mb, tb, lb))
	f.Add(joinParts(mb, tb, nil))
	f.Add(joinParts(nil, tb, lb))
	// The spike's markers as NCCL Inspector records instead, joined by
	// (host, pid) to the stormlog samples' ranks.
	var inspLines []string
	for _, l := range lines {
		if !strings.Contains(l, `"event_type":"collective"`) {
			inspLines = append(inspLines, l)
		}
	}
	for r := range traffic.ranks {
		inspLines = append(inspLines, inspectorLine(r, traffic.ranks, 1, traffic.spikes[0], traffic.spikes[0]+int64(time.Millisecond)))
	}
	ilb, err := (&plog.ProtoMarshaler{}).MarshalLogs(stormlogLogs(inspLines))
	require.NoError(f, err)
	f.Add(joinParts(mb, nil, ilb))

	f.Fuzz(func(t *testing.T, data []byte) {
		parts := splitParts(data, 3)
		md, mErr := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(parts[0])
		td, tErr := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(parts[1])
		ld, lErr := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(parts[2])
		if mErr != nil && tErr != nil && lErr != nil {
			return
		}
		tel := componenttest.NewTelemetry()
		defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
		cfg := createDefaultConfig().(*Config)
		cfg.PhaseSpanNames = []string{"train_step", "forward", "backward", "train"}
		cfg.Limits.MaxEventsPerRank = 1000
		if len(data)%2 == 1 {
			// Half the inputs go through evidence mode, which reads marker
			// spans' identity attributes and NCCL's accounting gauge too.
			cfg.Mode = ModeEvidence
		}
		p := newPipelines(t, cfg, tel)
		var front, back ptrace.Traces
		if tErr == nil {
			front, back = halves(td)
		}
		for round := range 2 {
			if mErr == nil {
				before := p.msink.DataPointCount()
				require.NoError(t, p.metrics.ConsumeMetrics(context.Background(), md))
				require.Equal(t, before+md.DataPointCount(), p.msink.DataPointCount())
			}
			if tErr == nil {
				first, second := back, front
				if round == 1 {
					first, second = front, back
				}
				for _, part := range []ptrace.Traces{first, second} {
					before := p.tsink.SpanCount()
					require.NoError(t, p.traces.ConsumeTraces(context.Background(), part))
					require.Equal(t, before+part.SpanCount(), p.tsink.SpanCount())
				}
			}
			if lErr == nil {
				before := p.lsink.LogRecordCount()
				require.NoError(t, p.logs.ConsumeLogs(context.Background(), ld))
				require.Equal(t, before+ld.LogRecordCount(), p.lsink.LogRecordCount())
			}
		}
		p.shutdown(t)
	})
}

// halves splits td into two requests: each scope's first half of spans
// and its second half, with the resource and scope copied into both.
func halves(td ptrace.Traces) (front, back ptrace.Traces) {
	front, back = ptrace.NewTraces(), ptrace.NewTraces()
	for _, rs := range td.ResourceSpans().All() {
		frs, brs := front.ResourceSpans().AppendEmpty(), back.ResourceSpans().AppendEmpty()
		rs.Resource().CopyTo(frs.Resource())
		rs.Resource().CopyTo(brs.Resource())
		for _, ss := range rs.ScopeSpans().All() {
			fss, bss := frs.ScopeSpans().AppendEmpty(), brs.ScopeSpans().AppendEmpty()
			ss.Scope().CopyTo(fss.Scope())
			ss.Scope().CopyTo(bss.Scope())
			for i, sp := range ss.Spans().All() {
				if i < ss.Spans().Len()/2 {
					sp.CopyTo(fss.Spans().AppendEmpty())
				} else {
					sp.CopyTo(bss.Spans().AppendEmpty())
				}
			}
		}
	}
	return front, back
}

// joinParts prefixes each part with its length (4 bytes, little endian).
func joinParts(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(p)))
		out = append(out, p...)
	}
	return out
}

// splitParts undoes joinParts on any input: a length past the end takes
// what is left, and missing parts are empty.
func splitParts(data []byte, n int) [][]byte {
	parts := make([][]byte, n)
	for i := range parts {
		if len(data) < 4 {
			break
		}
		size := int(binary.LittleEndian.Uint32(data))
		data = data[4:]
		size = min(size, len(data))
		parts[i], data = data[:size], data[size:]
	}
	return parts
}
