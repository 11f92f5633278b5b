package window_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/internal/eventgen"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

func stormlogEvent(rank int64, ts int64, eventType string, md map[string]any) telemetry.Event {
	return telemetry.Event{
		SchemaVersion: 3, SessionID: "s", TimestampNs: ts, EventType: eventType, Rank: rank, WorldSize: 4,
		AllocatorReservedBytes: telemetry.Int(10 << 30), DeviceUsedBytes: telemetry.Int(11 << 30),
		DeviceTotalBytes: telemetry.Int(80 << 30), Metadata: md,
	}
}

// streamEvidence streams events into one window in evidence mode and
// returns its snapshot's engine input.
func streamEvidence(events []telemetry.Event) *evidence.Input {
	s := window.NewStream(window.EvidenceMode, false)
	s.AddEvents(events)
	var sc window.Scratch
	var es window.EvidenceScratch
	snap := s.Job().EvidenceSnapshot(&sc, &es)
	return &snap.Input
}

// TestStreamEvidenceColumns: the evidence input of a streamed job holds
// per rank the samples in time order with their gaps (clamped at 0), the
// markers by start with their collective (its op, size, members and
// message size from the marker that names it) or none, and NCCL's
// accounting points; an accounting record without a total and a step
// record add nothing.
func TestStreamEvidenceColumns(t *testing.T) {
	events := []telemetry.Event{
		stormlogEvent(1, 300, "sample", nil),
		stormlogEvent(1, 100, "sample", nil), // out of order: sorted by time
		stormlogEvent(0, 150, "nccl:all_reduce", map[string]any{
			evidence.KeyCommID: "0xab", evidence.KeySeq: json.Number("7"), evidence.KeyOp: "all_reduce", evidence.KeyDurationNs: json.Number("40"),
			evidence.KeyCommNRanks: json.Number("2"), evidence.KeyCommRanks: []any{json.Number("1"), json.Number("0")},
			evidence.KeyMessageBytes: json.Number("1024"), evidence.KeyTimeApproximate: true,
		}),
		stormlogEvent(1, 160, "nccl:all_reduce", map[string]any{evidence.KeyCommID: "0xab", evidence.KeySeq: json.Number("7"), evidence.KeyOp: "all_reduce"}),
		stormlogEvent(0, 170, "ncclKernel", nil), // bare marker
		stormlogEvent(0, 200, evidence.AccountingEventType, map[string]any{evidence.KeyCommID: "0xab", evidence.KeyMemoryTotal: json.Number("4096")}),
		stormlogEvent(0, 210, evidence.AccountingEventType, map[string]any{evidence.KeyCommID: "0xab"}), // no total
		stormlogEvent(0, 220, "step_begin", map[string]any{"step": json.Number("3")}),
	}
	events[1].DeviceUsedBytes = telemetry.Int(9 << 30) // gap clamped at 0
	in := streamEvidence(events)
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
	if len(m0) != 2 || m0[0] != (evidence.Marker{StartNs: 150, EndNs: 190, Collective: 0, Approximate: true}) ||
		m0[1] != (evidence.Marker{StartNs: 170, EndNs: 170, Collective: evidence.NoCollective}) {
		t.Errorf("rank 0 markers %+v", m0)
	}
	if m1 := in.Ranks[1].Markers; len(m1) != 1 || m1[0].Collective != 0 {
		t.Errorf("rank 1 markers %+v, want one of collective 0", m1)
	}
	a := in.Ranks[0].Accounting
	if len(a) != 1 || a[0].CommID != "0xab" || len(a[0].Bytes) != 1 || a[0].Bytes[0] != 4096 {
		t.Errorf("rank 0 accounting %+v, want the one point with a total", a)
	}
}

// TestStreamCollectiveIsCommOpSeq: NCCL numbers each collective type on a
// communicator separately (the Inspector's coll_sn is
// comm->seqNumber[func]): an all_gather and an all_reduce with the same
// sequence number are two collectives, and the same op and number on two
// ranks is one; so are a send and the peer's recv.
func TestStreamCollectiveIsCommOpSeq(t *testing.T) {
	marker := func(rank int64, ts int64, op string, seq string) telemetry.Event {
		return stormlogEvent(rank, ts, "nccl:"+op, map[string]any{evidence.KeyCommID: "0xab", evidence.KeySeq: json.Number(seq), evidence.KeyOp: op})
	}
	in := streamEvidence([]telemetry.Event{
		marker(0, 100, "all_gather", "0"), marker(1, 105, "all_gather", "0"),
		marker(0, 200, "all_reduce", "0"), marker(1, 204, "all_reduce", "0"),
		marker(0, 300, "all_reduce", "1"), marker(1, 301, "all_reduce", "1"),
		marker(0, 400, "send", "2"), marker(1, 402, "recv", "2"),
	})
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

// TestStreamEvidenceParallelGivesTheSameResults: a streamed job's results
// do not depend on how many goroutines analyse its ranks (the generated
// 64-rank job with spikes at world collectives).
func TestStreamEvidenceParallelGivesTheSameResults(t *testing.T) {
	cfg, err := evidence.ResolveConfig("medium", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	events := eventgen.Events(eventgen.Default(64))
	want := evidence.Attribute(streamEvidence(events), cfg, nil)
	if len(want) == 0 {
		t.Fatal("the job gives no results: nothing compared")
	}
	for _, workers := range []int{2, 3, 8} {
		if got := evidence.AttributeParallel(streamEvidence(events), cfg, nil, workers); !reflect.DeepEqual(got, want) {
			t.Fatalf("%d workers: %d results differ from one worker's %d", workers, len(got), len(want))
		}
	}
}

// FuzzStreamEvidence streams decoded records into a window and attributes
// it in evidence mode: any valid record stream gives an input whose
// columns are sorted and whose marker indexes are in range, and
// attribution does not panic.
func FuzzStreamEvidence(f *testing.F) {
	base := `{"schema_version":3,"session_id":"s","timestamp_ns":%d,"event_type":"sample","collector":"c","sampling_interval_ms":100,"pid":1,"host":"h","job_id":"j","rank":%d,"local_rank":0,"world_size":2,"device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":1,"allocator_active_bytes":1,"allocator_inactive_bytes":0,"allocator_change_bytes":0,"device_used_bytes":%d,"device_free_bytes":1,"device_total_bytes":100,"context":null,"metadata":{}}`
	var seed bytes.Buffer
	for i := range 12 {
		seed.WriteString(fmt.Sprintf(base, 1000+i*100, i%2, 1+(i%5)*1000))
		seed.WriteByte('\n')
	}
	seed.WriteString(`{"schema_version":3,"session_id":"s","timestamp_ns":1500,"event_type":"nccl:all_reduce","collector":"c","sampling_interval_ms":100,"pid":1,"host":"h","job_id":"j","rank":0,"local_rank":0,"world_size":2,"device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":1,"allocator_active_bytes":1,"allocator_inactive_bytes":0,"allocator_change_bytes":0,"device_used_bytes":1,"device_free_bytes":1,"device_total_bytes":100,"context":null,"metadata":{"nccl.comm.id":"x","nccl.seq":1,"nccl.duration_ns":-5,"nccl.comm.ranks":[1,"a",0]}}` + "\n")
	seed.WriteString(`{"schema_version":3,"session_id":"s","timestamp_ns":1600,"event_type":"comm_memory_stats","collector":"c","sampling_interval_ms":100,"pid":1,"host":"h","job_id":"j","rank":1,"local_rank":0,"world_size":2,"device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":1,"allocator_active_bytes":1,"allocator_inactive_bytes":0,"allocator_change_bytes":0,"device_used_bytes":1,"device_free_bytes":1,"device_total_bytes":100,"context":null,"metadata":{"nccl.comm.id":"x","nccl.comm.memory.total_bytes":1e3}}` + "\n")
	f.Add(seed.Bytes())
	cfg, err := evidence.ResolveConfig("high", map[string]any{"min_samples_per_rank": 3, "min_confidence": 0}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := window.NewStream(window.EvidenceMode, false)
		if err := telemetry.Stream(bytes.NewReader(data), func(chunk []telemetry.Event) error {
			s.AddEvents(chunk)
			return nil
		}); err != nil {
			return
		}
		var sc window.Scratch
		var es window.EvidenceScratch
		snap := s.Job().EvidenceSnapshot(&sc, &es)
		in := &snap.Input
		for _, rd := range in.Ranks {
			for i := 1; i < len(rd.Samples.TimesNs); i++ {
				if rd.Samples.TimesNs[i] < rd.Samples.TimesNs[i-1] {
					t.Fatalf("rank %d samples out of order", rd.Rank)
				}
			}
			for _, m := range rd.Markers {
				if m.Collective != evidence.NoCollective && int(m.Collective) >= len(in.Collectives) || m.EndNs < m.StartNs {
					t.Fatalf("rank %d marker %+v", rd.Rank, m)
				}
			}
		}
		for _, r := range evidence.Attribute(in, cfg, nil) {
			if r.IntervalEndNs < uint64(r.IntervalStartNs) {
				t.Fatalf("interval ends before it starts: %+v", r)
			}
		}
	})
}
