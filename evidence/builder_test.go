package evidence

import (
	"encoding/json"
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

func event(rank int64, ts int64, eventType string, md map[string]any) telemetry.Event {
	return telemetry.Event{
		SchemaVersion: 3, SessionID: "s", TimestampNs: ts, EventType: eventType, Rank: rank, WorldSize: 4,
		AllocatorReservedBytes: telemetry.Int(10 << 30), DeviceUsedBytes: telemetry.Int(11 << 30),
		DeviceTotalBytes: telemetry.Int(80 << 30), Metadata: md,
	}
}

func TestBuilderColumns(t *testing.T) {
	b := NewBuilder()
	events := []telemetry.Event{
		event(1, 300, "sample", nil),
		event(1, 100, "sample", nil), // out of order: sorted by time
		event(0, 150, "nccl:all_reduce", map[string]any{
			KeyCommID: "0xab", KeySeq: json.Number("7"), KeyOp: "all_reduce", KeyDurationNs: json.Number("40"),
			KeyCommNRanks: json.Number("2"), KeyCommRanks: []any{json.Number("1"), json.Number("0")},
			KeyMessageBytes: json.Number("1024"), KeyTimeApproximate: true,
		}),
		event(1, 160, "nccl:all_reduce", map[string]any{KeyCommID: "0xab", KeySeq: json.Number("7"), KeyOp: "all_reduce"}),
		event(0, 170, "ncclKernel", nil), // bare marker
		event(0, 200, AccountingEventType, map[string]any{KeyCommID: "0xab", KeyMemoryTotal: json.Number("4096")}),
		event(0, 210, AccountingEventType, map[string]any{KeyCommID: "0xab"}), // no total: skipped
		event(0, 220, "step_begin", map[string]any{"step": json.Number("3")}),
	}
	events[1].DeviceUsedBytes = telemetry.Int(9 << 30) // gap clamped at 0
	for i := range events {
		b.Add(&events[i])
	}
	in := b.Input()
	if len(in.Ranks) != 2 || in.Ranks[0].Rank != 0 || in.Ranks[1].Rank != 1 {
		t.Fatalf("ranks %+v, want 0 and 1", in.Ranks)
	}
	if in.TraceStartNs != 100 || in.ExpectedWorldSize != 4 {
		t.Errorf("trace start %d world %d, want 100 and 4", in.TraceStartNs, in.ExpectedWorldSize)
	}
	s := in.Ranks[1].Samples
	if got := s.TimesNs; len(got) != 2 || got[0] != 100 || got[1] != 300 {
		t.Errorf("rank 1 sample times %v, want [100 300]", got)
	}
	if got := s.GapBytes; got[0] != 0 || got[1] != 1<<30 {
		t.Errorf("rank 1 gaps %v, want [0 1GiB]", got)
	}
	if len(in.Collectives) != 1 {
		t.Fatalf("collectives %+v, want one", in.Collectives)
	}
	c := in.Collectives[0]
	if c.CommID != "0xab" || c.Seq != 7 || c.Op != "all_reduce" || c.NRanks != 2 || c.MessageBytes != 1024 ||
		len(c.Ranks) != 2 || c.Ranks[0] != 0 || c.Ranks[1] != 1 {
		t.Errorf("collective %+v", c)
	}
	m0 := in.Ranks[0].Markers
	if len(m0) != 2 || m0[0] != (Marker{StartNs: 150, EndNs: 190, Collective: 0, Approximate: true}) ||
		m0[1] != (Marker{StartNs: 170, EndNs: 170, Collective: NoCollective}) {
		t.Errorf("rank 0 markers %+v", m0)
	}
	if m1 := in.Ranks[1].Markers; len(m1) != 1 || m1[0].Collective != 0 {
		t.Errorf("rank 1 markers %+v, want one of collective 0", m1)
	}
	a := in.Ranks[0].Accounting
	if len(a) != 1 || a[0].CommID != "0xab" || len(a[0].Bytes) != 1 || a[0].Bytes[0] != 4096 {
		t.Errorf("rank 0 accounting %+v", a)
	}
	if b.Skipped != 2 {
		t.Errorf("skipped %d, want 2 (accounting without a total, a step event)", b.Skipped)
	}
}

func TestMedianOf(t *testing.T) {
	for _, tc := range []struct {
		in   []int64
		want int64
	}{
		{[]int64{5}, 5},
		{[]int64{2, 1}, 1},
		{[]int64{3, 1, 2}, 2},
		{[]int64{4, 4, 4, 1, 9, 4}, 4},
		{[]int64{10, -3, 7, 7, 0, 2, 8, 1}, 2},
		{[]int64{1 << 62, -1 << 62, 0}, 0},
	} {
		if got := medianOf(append([]int64(nil), tc.in...)); got != tc.want {
			t.Errorf("medianOf(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// NCCL numbers each collective type on a communicator separately (the
// Inspector's coll_sn is comm->seqNumber[func]): an all_gather and an
// all_reduce with the same sequence number are two collectives, and the
// same op and number on two ranks is one; so are a send and the peer's recv.
func TestBuilderCollectiveIsCommOpSeq(t *testing.T) {
	b := NewBuilder()
	marker := func(rank int64, ts int64, op string, seq string) telemetry.Event {
		return event(rank, ts, "nccl:"+op, map[string]any{KeyCommID: "0xab", KeySeq: json.Number(seq), KeyOp: op})
	}
	events := []telemetry.Event{
		marker(0, 100, "all_gather", "0"), marker(1, 105, "all_gather", "0"),
		marker(0, 200, "all_reduce", "0"), marker(1, 204, "all_reduce", "0"),
		marker(0, 300, "all_reduce", "1"), marker(1, 301, "all_reduce", "1"),
		marker(0, 400, "send", "2"), marker(1, 402, "recv", "2"),
	}
	for i := range events {
		b.Add(&events[i])
	}
	in := b.Input()
	if len(in.Collectives) != 4 {
		t.Fatalf("%d collectives %+v, want 4 (all_gather 0, all_reduce 0, all_reduce 1, send/recv 2)", len(in.Collectives), in.Collectives)
	}
	for _, rd := range in.Ranks {
		for i, m := range rd.Markers {
			if m.Collective != int32(i) {
				t.Errorf("rank %d marker %d is collective %d %+v, want %d", rd.Rank, i, m.Collective, in.Collectives[m.Collective], i)
			}
		}
	}
}
