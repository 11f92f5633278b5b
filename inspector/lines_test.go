package inspector

import (
	"errors"
	"strings"
	"testing"
)

// A v4.3 stream: each communicator's dump starts with a dump_stats line
// carrying header and metadata, and its op lines carry neither.
const v43Stream = `{"header":{"id":"0x7f8c496ae9f661","rank":2,"n_ranks":8,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.3","git_rev":"","rec_mechanism":"nccl_profiler_interface","dump_timestamp_us":1748030377748202,"hostname":"example-hostname","pid":1639453},"dump_stats":{"coll_records":1,"coll_dropped_total":4096,"p2p_records":1}}
{"coll_perf":{"coll":"AllReduce","coll_algo":"RING","coll_proto":"LL","coll_sn":1407,"coll_msg_size_bytes":17179869184,"coll_exec_time_us":61974,"coll_algobw_gbs":277.210914,"coll_busbw_gbs":485.119099}}
{"p2p_perf":{"p2p":"Recv","p2p_sn":3,"p2p_peer":7,"p2p_msg_size_bytes":8192,"p2p_exec_time_us":2,"p2p_algobw_gbs":"nan","p2p_busbw_gbs":"nan"}}
{"proxy_trace":{"record_type":"proxy_op","record_sn":42,"parent_type":"coll","parent_sn":1407}}
{"header":{"id":"0xabc","rank":0,"n_ranks":2,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.3","dump_timestamp_us":1748030377800000,"hostname":"example-hostname","pid":1639453},"dump_stats":{"coll_records":1}}

{"coll_perf":{"coll":"Broadcast","coll_sn":0,"coll_msg_size_bytes":8192,"coll_exec_time_us":10,"coll_algobw_gbs":1.0,"coll_busbw_gbs":1.0}}
{"coll_perf":{"coll":"Broadcast","coll_sn":1,"coll_msg_size_bytes":8192,"coll_exec_ti
`

func TestReaderV43MarkerContext(t *testing.T) {
	var rd Reader
	var ops []Op
	if err := rd.Read(strings.NewReader(v43Stream), func(op *Op) { ops = append(ops, *op) }); err != nil {
		t.Fatal(err)
	}
	if len(ops) != 3 {
		t.Fatalf("%d ops, want 3", len(ops))
	}
	want := []struct {
		comm     string
		rank     int64
		op       string
		startNs  int64
		endNs    int64
		nanFlags bool
	}{
		{"0x7f8c496ae9f661", 2, "all_reduce", (1748030377748202 - 61974) * 1000, 1748030377748202 * 1000, false},
		{"0x7f8c496ae9f661", 2, "recv", (1748030377748202 - 2) * 1000, 1748030377748202 * 1000, true},
		{"0xabc", 0, "broadcast", (1748030377800000 - 10) * 1000, 1748030377800000 * 1000, false},
	}
	for i, w := range want {
		op := ops[i]
		if op.CommID != w.comm || op.CommRank != w.rank || op.Op != w.op || op.StartNs != w.startNs || op.EndNs != w.endNs ||
			op.Host != "example-hostname" || op.PID != 1639453 || op.Version != "v4.3" || (op.Flags&FlagNaNBandwidth != 0) != w.nanFlags {
			t.Errorf("op %d: %+v", i, op)
		}
	}
	st := rd.Stats
	if st.Ops != 3 || st.Collectives != 2 || st.P2P != 1 || st.NotOpRecords != 3 || st.Malformed != 1 || st.NaNBandwidth != 1 || st.ApproximateTime != 3 {
		t.Fatalf("stats %+v", st)
	}
	var syntax *SyntaxError
	if rd.FirstError == nil || rd.FirstError.Line != 8 || !errors.As(rd.FirstError, &syntax) {
		t.Fatalf("first error %v, want the torn line 8", rd.FirstError)
	}

	// A new file starts without context: a header-less op line alone is
	// incomplete, as it is for the stateless Parse.
	opLine := strings.Split(v43Stream, "\n")[1]
	if err := rd.Read(strings.NewReader(opLine), func(*Op) { t.Fatal("op without context") }); err != nil {
		t.Fatal(err)
	}
	if rd.Stats.Malformed != 2 {
		t.Fatalf("malformed %d, want the header-less line counted too", rd.Stats.Malformed)
	}
	var field *FieldError
	if _, err := Parse([]byte(opLine)); !errors.As(err, &field) || field.Field != "header.id" {
		t.Fatalf("Parse of a header-less line: %v", err)
	}
}
