package inspector

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParse: Parse never panics, and what it accepts is a consistent op
// from a line that is JSON (or JSON with the writer's bare inf/nan tokens).
func FuzzParse(f *testing.F) {
	for _, line := range specExamples(f) {
		f.Add(line)
	}
	f.Add([]byte(`{"header":{"id":"0x1","rank":0,"n_ranks":1},"metadata":{"dump_timestamp_us":5,"hostname":"h","pid":1},"p2p_perf":{"p2p":"Recv","p2p_peer":0,"p2p_msg_size_bytes":18446744073709551615,"p2p_exec_time_us":5,"p2p_algobw_gbs":inf}}`))
	f.Add([]byte(`{"dump_stats":[{"a":"\ud800"}]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		op, err := Parse(line)
		if err != nil {
			return
		}
		if !json.Valid(line) && !bytes.Contains(line, []byte("inf")) && !bytes.Contains(line, []byte("nan")) {
			t.Fatalf("accepted a line that is not JSON: %q", line)
		}
		switch {
		case op.Host == "" || op.CommID == "" || op.PID < 0:
			t.Fatalf("empty identity: %+v", op)
		case op.CommRank < 0 || op.CommRank >= op.NRanks:
			t.Fatalf("rank outside the communicator: %+v", op)
		case op.HasPeer && (op.Peer < 0 || op.Peer >= op.NRanks):
			t.Fatalf("peer outside the communicator: %+v", op)
		case op.StartNs < 0 || op.EndNs < op.StartNs:
			t.Fatalf("bad interval: %+v", op)
		case op.MessageBytes < 0:
			t.Fatalf("negative size: %+v", op)
		case op.Kind != Collective && op.Kind != P2P:
			t.Fatalf("no kind: %+v", op)
		case op.HasSeq != (op.Kind == Collective):
			t.Fatalf("seq on a P2P op or none on a collective: %+v", op)
		}
	})
}
