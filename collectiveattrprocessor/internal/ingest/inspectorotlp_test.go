package ingest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/collectiveattr/collectiveattr/inspector"
)

// inspectorOTLP is a batch as the plugin's OTLP exporter sends it: one
// resource (service.name and what OTEL_RESOURCE_ATTRIBUTES adds), scope
// nccl-inspector, per-operation gauges whose attributes are all strings.
func inspectorOTLP(resource map[string]any, points ...map[string]string) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	_ = rm.Resource().Attributes().FromRaw(mergeRaw(map[string]any{"service.name": "nccl-inspector"}, resource))
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("nccl-inspector")
	for _, name := range []string{"nccl_bus_bandwidth_gbs", inspectorCollExecMetric, inspectorP2PExecMetric} {
		m := sm.Metrics().AppendEmpty()
		m.SetName(name)
		m.SetUnit("us")
		dps := m.SetEmptyGauge().DataPoints()
		for _, p := range points {
			_, p2p := p["p2p_operation"]
			if (name == inspectorP2PExecMetric) != p2p && name != "nccl_bus_bandwidth_gbs" {
				continue
			}
			dp := dps.AppendEmpty()
			for k, v := range p {
				if k != "value" && k != "time_us" {
					dp.Attributes().PutStr(k, v)
				}
			}
			var us int64
			_ = json.Unmarshal([]byte(p["time_us"]), &us)
			dp.SetTimestamp(pcommon.Timestamp(us * 1000))
			var v float64
			_ = json.Unmarshal([]byte(p["value"]), &v)
			dp.SetDoubleValue(v)
		}
	}
	return md
}

func mergeRaw(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

func collPoint(sn string, timeUs int64) map[string]string {
	return map[string]string{
		"version": "v5.2", "node": "node01", "gpu": "GPU3", "comm_name": "DP Group 0", "comm_id": "0x7f8c496ae9f661",
		"n_nodes": "1", "nranks": "8", "coll_msg_size_bytes": "17179869184", "collective": "AllReduce", "coll_sn": sn,
		"algo_proto": "RING_LL", "value": "61974", "time_us": itoa(timeUs),
	}
}

// Per-operation points join their rank by (node, process.pid) and become
// markers with the op's identity; the op ends at the point's time.
func TestInspectorOTLPJoinsByNodeAndPID(t *testing.T) {
	c, _ := newTestConverter(Config{Inspector: InspectorConfig{Markers: inspector.EvidenceMarker}})
	c.Metrics(rankMetrics("job-a", 3, "node01", 4242))(func(Read) bool { return true })
	var got collected
	got.collect(c.Metrics(inspectorOTLP(map[string]any{"process.pid": 4242}, collPoint("1407", t0Us+100_000))))
	require.Empty(t, got.skips)
	require.Len(t, got.records, 1, "one marker per op, not one per metric of it")
	r := got.records[0]
	assert.Equal(t, "job-a", r.JobID)
	assert.EqualValues(t, 3, r.Rank)
	assert.EqualValues(t, (t0Us+100_000-61974)*1000, r.TimestampNs)
	md := r.Event.Metadata
	assert.Equal(t, "0x7f8c496ae9f661", md["nccl.comm.id"])
	assert.Equal(t, json.Number("1407"), md["nccl.seq"])
	assert.Equal(t, "all_reduce", md["nccl.op"])
	assert.Equal(t, json.Number("8"), md["nccl.comm.nranks"])
	assert.Equal(t, json.Number("61974000"), md["nccl.duration_ns"])
	assert.Nil(t, md["nccl.time_approximate"])
	assert.EqualValues(t, 1, c.InspectorStats().Joined)
}

// A resource that names the rank itself joins without a pid; one that
// names neither is refused with what the operator must add; aggregated
// points are no ops; a point missing an attribute is an invalid value.
func TestInspectorOTLPOwners(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resource map[string]any
		point    map[string]string
		records  int
		skip     SkipReason
		detail   string
	}{
		{"rank in the resource", map[string]any{"training.job.id": "job-b", "training.rank": 5}, collPoint("3", t0Us), 1, "", ""},
		{"no rank and no pid", map[string]any{}, collPoint("3", t0Us), 0, SkipUnjoinable, "OTEL_RESOURCE_ATTRIBUTES"},
		{"aggregated bucket", map[string]any{"process.pid": 4242}, func() map[string]string {
			p := collPoint("3", t0Us)
			delete(p, "coll_sn")
			delete(p, "comm_id")
			p["message_size"] = "16-17GB"
			return p
		}(), 0, "", ""},
		{"no comm_id", map[string]any{"process.pid": 4242}, func() map[string]string {
			p := collPoint("3", t0Us)
			delete(p, "comm_id")
			return p
		}(), 0, SkipInvalidValue, "comm_id"},
		{"P2P without a comm rank: no transfer number", map[string]any{"process.pid": 4242}, map[string]string{
			"version": "v5.2", "node": "node01", "gpu": "GPU3", "comm_name": "PP", "comm_id": "0xe62dedaa97644a",
			"n_nodes": "1", "nranks": "8", "p2p_msg_size_bytes": "33554432", "p2p_operation": "Send", "p2p_sn": "42",
			"p2p_peer": "5", "value": "150", "time_us": itoa(t0Us),
		}, 1, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestConverter(Config{Inspector: InspectorConfig{Markers: inspector.EvidenceMarker}})
			c.Metrics(rankMetrics("job-a", 3, "node01", 4242))(func(Read) bool { return true })
			var got collected
			got.collect(c.Metrics(inspectorOTLP(tc.resource, tc.point)))
			require.Len(t, got.records, tc.records)
			if tc.skip == "" {
				require.Empty(t, got.skips)
			} else {
				require.Len(t, got.skips, 1)
				assert.Equal(t, tc.skip, got.skips[0].Reason)
				assert.Contains(t, got.skips[0].Detail, tc.detail)
			}
			for _, r := range got.records {
				if _, p2p := tc.point["p2p_operation"]; p2p {
					assert.Nil(t, r.Event.Metadata["nccl.seq"], "a P2P op without its comm rank has no transfer number")
					assert.Equal(t, json.Number("5"), r.Event.Metadata["nccl.peer_comm_rank"])
				}
			}
		})
	}
}

// FuzzInspectorOTLPPoint: any attribute values and point give a consistent
// op or an error, never a panic.
func FuzzInspectorOTLPPoint(f *testing.F) {
	f.Add("node01", "0x7f8c496ae9f661", "8", "AllReduce", "1407", "17179869184", "", 61974.0, int64(1767225600100000))
	f.Add("node01", "0xe6", "8", "Send", "42", "33554432", "5", 150.0, int64(1))
	f.Add("", "unknown", "-1", "", "x", "-5", "9", -1.0, int64(-1))
	f.Fuzz(func(t *testing.T, node, comm, nranks, name, sn, size, peer string, value float64, timeUs int64) {
		kind := inspector.Collective
		attrs := pcommon.NewMap()
		attrs.PutStr("node", node)
		attrs.PutStr("comm_id", comm)
		attrs.PutStr("nranks", nranks)
		if peer != "" {
			kind = inspector.P2P
			attrs.PutStr("p2p_operation", name)
			attrs.PutStr("p2p_sn", sn)
			attrs.PutStr("p2p_msg_size_bytes", size)
			attrs.PutStr("p2p_peer", peer)
		} else {
			attrs.PutStr("collective", name)
			attrs.PutStr("coll_sn", sn)
			attrs.PutStr("coll_msg_size_bytes", size)
		}
		dp := pmetric.NewNumberDataPoint()
		dp.SetDoubleValue(value)
		dp.SetTimestamp(pcommon.Timestamp(uint64(timeUs) * 1000))
		var op inspector.Op
		if msg, _ := inspectorOpOfPoint(&op, attrs, dp, kind); msg != "" {
			return
		}
		switch {
		case op.Host == "" || op.CommID == "" || op.NRanks < 1:
			t.Fatalf("empty identity: %+v", op)
		case op.StartNs > op.EndNs || op.ExecTimeUs < 0 || op.MessageBytes < 0:
			t.Fatalf("bad interval or size: %+v", op)
		case op.HasPeer && (op.Peer < 0 || op.Peer >= op.NRanks):
			t.Fatalf("peer outside the communicator: %+v", op)
		case op.HasSeq != (kind == inspector.Collective):
			t.Fatalf("seq on a P2P op: %+v", op)
		}
	})
}
