package inspector

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A v4.3 stream as NVIDIA's writer lays it out: each communicator's dump
// starts with a dump_stats line carrying header and metadata once and the
// counts of the op and proxy lines after it, which carry neither.
const v43Stream = `{"header":{"id":"0x7f8c496ae9f661","rank":2,"n_ranks":8,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.3","git_rev":"","rec_mechanism":"nccl_profiler_interface","dump_timestamp_us":1748030377748202,"hostname":"example-hostname","pid":1639453},"dump_stats":{"coll_records":1,"coll_dropped_total":4096,"coll_dropped_since_last_dump":0,"p2p_records":1,"p2p_dropped_total":0,"p2p_dropped_since_last_dump":0,"proxy_records":1}}
{"coll_perf":{"coll":"AllReduce","coll_algo":"RING","coll_proto":"LL","coll_sn":1407,"coll_msg_size_bytes":17179869184,"coll_exec_time_us":61974,"coll_algobw_gbs":277.210914,"coll_busbw_gbs":485.119099}}
{"p2p_perf":{"p2p":"Recv","p2p_sn":3,"p2p_peer":7,"p2p_msg_size_bytes":8192,"p2p_exec_time_us":2,"p2p_algobw_gbs":"nan","p2p_busbw_gbs":"nan"}}
{"proxy_trace":{"record_type":"proxy_op","record_sn":42,"parent_type":"coll","parent_sn":1407}}
{"header":{"id":"0xabc","rank":0,"n_ranks":2,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.4","dump_timestamp_us":1748030377800000,"hostname":"example-hostname","pid":1639453},"dump_stats":{"coll_records":1,"p2p_records":0}}

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
		version  string
	}{
		{"0x7f8c496ae9f661", 2, "all_reduce", (1748030377748202 - 61974) * 1000, 1748030377748202 * 1000, false, "v4.3"},
		{"0x7f8c496ae9f661", 2, "recv", (1748030377748202 - 2) * 1000, 1748030377748202 * 1000, true, "v4.3"},
		{"0xabc", 0, "broadcast", (1748030377800000 - 10) * 1000, 1748030377800000 * 1000, false, "v4.4"},
	}
	for i, w := range want {
		op := ops[i]
		if op.CommID != w.comm || op.CommRank != w.rank || op.Op != w.op || op.StartNs != w.startNs || op.EndNs != w.endNs ||
			op.Host != "example-hostname" || op.PID != 1639453 || op.Version != w.version || (op.Flags&FlagNaNBandwidth != 0) != w.nanFlags {
			t.Errorf("op %d: %+v", i, op)
		}
	}
	if ops[0].Algo != "RING" || ops[0].Proto != "LL" {
		t.Errorf("algo %q proto %q, want RING LL", ops[0].Algo, ops[0].Proto)
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

// The context of a dump covers only the lines it announces, and a dump
// header that is torn or incomplete gives its op lines no context: they
// are refused, never read as the previous communicator's or process's.
func TestReaderDumpContextBounded(t *testing.T) {
	header := func(id string, rank, pid, colls int) string {
		return fmt.Sprintf(`{"header":{"id":%q,"comm_name":"unknown","rank":%d,"n_ranks":4,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.4","git_rev":"","rec_mechanism":"nccl_profiler_interface","dump_timestamp_us":1748030377800000,"hostname":"node01","pid":%d},"dump_stats":{"coll_records":%d,"coll_dropped_total":0,"coll_dropped_since_last_dump":0,"p2p_records":0,"p2p_dropped_total":0,"p2p_dropped_since_last_dump":0}}`, id, rank, pid, colls)
	}
	op := func(sn int) string {
		return fmt.Sprintf(`{"coll_perf":{"coll":"AllReduce","coll_algo":"RING","coll_proto":"SIMPLE","coll_sn":%d,"coll_msg_size_bytes":8192,"coll_exec_time_us":10,"coll_timing_source":"kernel_gpu","coll_algobw_gbs":1.000000,"coll_busbw_gbs":1.500000}}`, sn)
	}
	torn := header("0xbbb", 3, 7, 2)
	tests := []struct {
		name            string
		lines           []string
		wantSeqs        []int64
		wantMalformed   int
		wantIncomplete  int
		wantFirstErrAt  int
		wantFirstErrMsg string
	}{
		{"more op lines than announced", []string{header("0xaaa", 1, 5, 1), op(0), op(1)}, []int64{0}, 1, 0, 3, "beyond the record counts"},
		{"torn header", []string{header("0xaaa", 1, 5, 1), op(0), torn[:len(torn)/2], op(1), op(2)}, []int64{0}, 3, 0, 3, "malformed JSON"},
		{"header without rank", []string{header("0xaaa", 1, 5, 1), op(0), strings.Replace(header("0xbbb", 3, 7, 2), `"rank":3,`, "", 1), op(1), op(2)}, []int64{0}, 3, 0, 3, "header.rank is missing"},
		{"header without counts", []string{strings.Replace(header("0xaaa", 1, 5, 1), `"coll_records":1,`, "", 1), op(0)}, nil, 2, 0, 1, "dump_stats.coll_records is missing"},
		{"dump cut short", []string{header("0xaaa", 1, 5, 3), op(0), header("0xbbb", 3, 7, 1), op(1)}, []int64{0, 1}, 0, 1, 0, ""},
		{"file ends inside a dump", []string{header("0xaaa", 1, 5, 3), op(0)}, []int64{0}, 0, 1, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rd Reader
			var seqs []int64
			var ops []Op
			err := rd.Read(strings.NewReader(strings.Join(tc.lines, "\n")+"\n"), func(op *Op) {
				seqs = append(seqs, op.Seq)
				ops = append(ops, *op)
			})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(seqs) != fmt.Sprint(tc.wantSeqs) {
				t.Fatalf("ops %v, want %v", seqs, tc.wantSeqs)
			}
			for _, op := range ops {
				if op.Seq == 1 && (op.CommID != "0xbbb" || op.PID != 7 || op.CommRank != 3) {
					t.Fatalf("op of the second dump read as %s rank %d pid %d", op.CommID, op.CommRank, op.PID)
				}
			}
			if rd.Stats.Malformed != tc.wantMalformed || rd.Stats.IncompleteDumps != tc.wantIncomplete {
				t.Fatalf("stats %+v, want %d malformed and %d incomplete dumps", rd.Stats, tc.wantMalformed, tc.wantIncomplete)
			}
			if tc.wantFirstErrAt != 0 && (rd.FirstError == nil || rd.FirstError.Line != tc.wantFirstErrAt || !strings.Contains(rd.FirstError.Error(), tc.wantFirstErrMsg)) {
				t.Fatalf("first error %v, want line %d: %s", rd.FirstError, tc.wantFirstErrAt, tc.wantFirstErrMsg)
			}
		})
	}
}
