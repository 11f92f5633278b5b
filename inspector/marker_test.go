package inspector

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

func mustParse(t *testing.T, line []byte) *Op {
	t.Helper()
	op, err := Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	return &op
}

var testOwner = Owner{JobID: "job-7", SessionID: "job-7-rank12", Rank: 12, LocalRank: 4, WorldSize: 16, DeviceID: 4, SamplingIntervalMs: 100}

func TestReferenceMarkers(t *testing.T) {
	op := mustParse(t, variant(t, false))
	got := ReferenceMarkers(nil, &Joined{Op: op, Owner: testOwner})
	if len(got) != 2 {
		t.Fatalf("%d events, want a start and an end marker", len(got))
	}
	for i, wantTs := range []int64{1752867229235059000, 1752867229275811000} {
		e := &got[i]
		if e.TimestampNs != wantTs {
			t.Errorf("event %d at %d, want %d", i, e.TimestampNs, wantTs)
		}
		if !attribution.IsMarker(e) || attribution.IsSample(e) {
			t.Errorf("event %d: marker %v sample %v, want a marker that is no sample", i, attribution.IsMarker(e), attribution.IsSample(e))
		}
		if e.EventType != "nccl:reduce_scatter" || e.JobID != "job-7" || e.SessionID != "job-7-rank12" || e.Rank != 12 ||
			e.LocalRank != 4 || e.WorldSize != 16 || e.DeviceID != 4 || e.Host != "node01" || e.PID != 438776 || e.SchemaVersion != 3 {
			t.Errorf("event %d: %+v", i, *e)
		}
		if e.Metadata != nil {
			t.Errorf("event %d carries metadata %v in reference mode", i, e.Metadata)
		}
	}

	// A zero-duration op (a stormlog marker written as a record) is one marker.
	zero := *op
	zero.EndNs = zero.StartNs
	if n := len(ReferenceMarkers(nil, &Joined{Op: &zero, Owner: testOwner})); n != 1 {
		t.Fatalf("zero-duration op gave %d markers, want 1", n)
	}
}

func TestMarkersOfEveryOpAreMarkers(t *testing.T) {
	// Send, Recv and Invalid carry no collective token of their own: the
	// event type's "nccl" prefix makes them markers.
	for _, name := range []string{"Send", "Recv", "Invalid", "AllReduce"} {
		op := mustParse(t, variant(t, true, `"Send"`, `"`+name+`"`))
		for _, f := range []MarkerFunc{ReferenceMarkers, EvidenceMarker} {
			for _, e := range f(nil, &Joined{Op: op, Owner: testOwner}) {
				if !attribution.IsMarker(&e) {
					t.Errorf("%s: %q is no marker", name, e.EventType)
				}
			}
		}
	}
}

func TestEvidenceMarker(t *testing.T) {
	n := func(v int64) json.Number { return jsonInt(v) }
	tests := []struct {
		name string
		line []byte
		comm []int64
		want map[string]any
	}{
		{"verbose collective", variant(t, false), nil, map[string]any{
			"nccl.comm.id": "0xe62dedaa97644a", "nccl.comm.name": "DP Group 0", "nccl.op": "reduce_scatter",
			"nccl.seq": n(1231), "nccl.message_bytes": n(2147483648), "nccl.comm.nranks": n(8),
			"nccl.duration_ns": n((1752867229275811 - 1752867229235059) * 1000),
		}},
		{"default layout is approximate", specExamples(t)[0], nil, map[string]any{
			"nccl.comm.id": "0x7f8c496ae9f661", "nccl.comm.name": "unknown", "nccl.op": "all_reduce",
			"nccl.seq": n(1407), "nccl.message_bytes": n(17179869184), "nccl.comm.nranks": n(8),
			"nccl.duration_ns": n(61974 * 1000), "nccl.time_approximate": true,
		}},
		// A P2P op is the first transfer of the pair comm rank 4 → 5 (the
		// only record its Parser read).
		{"p2p before its communicator is joined", variant(t, true), nil, map[string]any{
			"nccl.comm.id": "0xe62dedaa97644a/4->5", "nccl.comm.name": "PP Group 0", "nccl.op": "send",
			"nccl.seq": n(0), "nccl.message_bytes": n(33554432), "nccl.comm.nranks": n(2), "nccl.peer_comm_rank": n(5),
			"nccl.duration_ns": n((1752867229235340 - 1752867229235059) * 1000),
		}},
		{"p2p with its communicator joined", variant(t, true), []int64{8, 9, 10, 11, 12, 13, 14, 15}, map[string]any{
			"nccl.comm.id": "0xe62dedaa97644a/4->5", "nccl.comm.name": "PP Group 0", "nccl.op": "send",
			"nccl.seq": n(0), "nccl.message_bytes": n(33554432), "nccl.comm.nranks": n(2), "nccl.peer": n(13),
			"nccl.comm.ranks":  []any{n(12), n(13)},
			"nccl.duration_ns": n((1752867229235340 - 1752867229235059) * 1000),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			op := mustParse(t, tc.line)
			got := EvidenceMarker(nil, &Joined{Op: op, Owner: testOwner, CommRanks: tc.comm})
			if len(got) != 1 {
				t.Fatalf("%d events, want 1", len(got))
			}
			e := got[0]
			if e.TimestampNs != op.StartNs || e.Rank != 12 || e.JobID != "job-7" {
				t.Fatalf("event %+v", e)
			}
			if !reflect.DeepEqual(e.Metadata, tc.want) {
				t.Fatalf("metadata\n got %v\nwant %v", e.Metadata, tc.want)
			}
			// The metadata round-trips through the stormlog codec.
			line := telemetry.AppendJSON(nil, &e)
			back, err := telemetry.DecodeRecord(line)
			if err != nil {
				t.Fatalf("converted event does not validate: %v\n%s", err, line)
			}
			if back.Metadata["nccl.op"] != tc.want["nccl.op"] {
				t.Fatalf("decoded metadata %v", back.Metadata)
			}
		})
	}
}

func TestMembers(t *testing.T) {
	var m Members
	ops := make([]*Op, 4)
	for r := range ops {
		op := mustParse(t, variant(t, false, `"rank":4,"n_ranks":8`, `"rank":`+string(rune('0'+r))+`,"n_ranks":4`))
		ops[r] = op
	}
	// Comm rank r is global rank 10 + 2r.
	for r := range 3 {
		m.Learn("job", ops[r], int64(10+2*r))
	}
	if got := m.Ranks("job", ops[0]); got != nil {
		t.Fatalf("ranks %v before every member is joined", got)
	}
	m.Learn("job", ops[3], 16)
	m.Learn("job", ops[3], 16) // repeated records say nothing new
	if got := m.Ranks("job", ops[0]); !reflect.DeepEqual(got, []int64{10, 12, 14, 16}) {
		t.Fatalf("ranks %v", got)
	}
	if got := m.Ranks("other-job", ops[0]); got != nil {
		t.Fatalf("another job's communicator: %v", got)
	}
	// A disagreement makes the communicator unusable.
	m.Learn("job", ops[1], 99)
	if got := m.Ranks("job", ops[0]); got != nil {
		t.Fatalf("ranks %v after two global ranks claimed comm rank 1", got)
	}
	m.Forget("job")
	if len(m.comms) != 0 {
		t.Fatalf("Forget left %d communicators", len(m.comms))
	}
}

// "Invalid" stands for several NCCL functions, each numbered on its own
// counter: an all-to-all and a gather of one communicator with the same
// coll_sn must not name one collective.
func TestEvidenceMarkerInvalidIsBare(t *testing.T) {
	var table evidence.CollectiveTable
	token := func() bool { return true }
	for _, sn := range []string{`"coll_sn":1231`, `"coll_sn":1231`} {
		op := mustParse(t, variant(t, false, `"ReduceScatter"`, `"Invalid"`, `"coll_sn":1231`, sn))
		events := EvidenceMarker(nil, &Joined{Op: op, Owner: testOwner, CommRanks: []int64{0, 1, 2, 3, 4, 5, 6, 7}})
		if len(events) != 1 {
			t.Fatalf("%d events", len(events))
		}
		e := &events[0]
		if _, ok := e.Metadata["nccl.seq"]; ok {
			t.Fatalf("Invalid op carries nccl.seq: %v", e.Metadata)
		}
		m, ok := evidence.MetadataMarker(e, token, &table)
		if !ok || m.Collective != evidence.NoCollective {
			t.Fatalf("marker %+v ok %v: want a bare marker", m, ok)
		}
		if e.Metadata["nccl.op"] != "invalid" || !attribution.IsMarker(e) {
			t.Fatalf("event %+v", *e)
		}
	}
	if len(table.List) != 0 {
		t.Fatalf("collectives %+v, want none", table.List)
	}
}
