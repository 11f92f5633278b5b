package markers

import (
	"reflect"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/inspector"
)

func TestOpName(t *testing.T) {
	for in, want := range map[string]string{
		"allreduce": "all_reduce", "nccl:all_reduce": "all_reduce", "_allgather_base": "all_gather",
		"nccl:reduce_scatter_tensor_coalesced": "reduce_scatter", "nccl:send 0->1": "send", "nccl:recv 1<-0": "recv",
		"all_to_allv": "all_to_all", "barrier": "barrier", "nccl:_reduce_scatter_base": "reduce_scatter", "Custom": "custom",
	} {
		if got := OpName(in); got != want {
			t.Errorf("OpName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseRanks(t *testing.T) {
	for in, want := range map[string][]int64{
		"[0, 1, 2, 3]": {0, 1, 2, 3}, "[7]": {7}, " [4,5] ": {4, 5},
		"[]": nil, "[0, 1, ..., 63]": nil, "0,1": nil, "[a]": nil, "[-1]": nil,
	} {
		if got := ParseRanks(in); !reflect.DeepEqual(got, want) {
			t.Errorf("ParseRanks(%q) = %v, want %v", in, got, want)
		}
	}
}

// A marker with identity names a collective in evidence mode; one
// without is a bare marker; both are markers for the reference mode.
func TestEvents(t *testing.T) {
	owner := &inspector.Owner{JobID: "j", SessionID: "s", Rank: 3, WorldSize: 4, DeviceID: 3}
	with := Marker{Rank: 3, StartNs: 100, EndNs: 250, Op: "all_reduce", CommID: "0", Seq: 5, HasSeq: true, NRanks: 4, Ranks: []int64{0, 1, 2, 3}, MessageBytes: 1024}
	bare := Marker{Rank: 3, StartNs: 100, EndNs: 100, Op: "send", CommID: "0"}
	var table evidence.CollectiveTable
	token := func() bool { return true }
	for _, tc := range []struct {
		m        Marker
		refCount int
		identity bool
	}{{with, 2, true}, {bare, 1, false}} {
		ref := ReferenceEvents(nil, &tc.m, owner, "torch_profiler")
		if len(ref) != tc.refCount {
			t.Fatalf("%d reference events, want %d", len(ref), tc.refCount)
		}
		for i := range ref {
			if !attribution.IsMarker(&ref[i]) || attribution.IsSample(&ref[i]) || ref[i].Rank != 3 || ref[i].SessionID != "s" || ref[i].Metadata != nil {
				t.Fatalf("reference event %+v", ref[i])
			}
		}
		ev := EvidenceEvents(nil, &tc.m, owner, "torch_profiler")
		mk, ok := evidence.MetadataMarker(&ev[0], token, &table)
		if !ok || (mk.Collective != evidence.NoCollective) != tc.identity || mk.StartNs != 100 || mk.EndNs != tc.m.EndNs {
			t.Fatalf("evidence marker %+v ok %v for %+v", mk, ok, tc.m)
		}
	}
	if len(table.List) != 1 || table.List[0].CommID != "0" || table.List[0].Seq != 5 || table.List[0].NRanks != 4 || !reflect.DeepEqual(table.List[0].Ranks, []int64{0, 1, 2, 3}) {
		t.Fatalf("collectives %+v", table.List)
	}
}
