package inspector

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

// The three example records of docs/nccl-inspector.md §2, as the plugin
// writes them: default collective, verbose collective, verbose P2P.
func specExamples(t testing.TB) [][]byte {
	t.Helper()
	data, err := os.ReadFile("testdata/spec-examples.log")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) != 3 {
		t.Fatalf("%d example lines, want 3", len(lines))
	}
	return lines
}

func TestParseSpecExamples(t *testing.T) {
	lines := specExamples(t)
	want := []Op{
		{
			Host: "node01", PID: 1639453, CommID: "0x7f8c496ae9f661", CommName: "unknown",
			CommRank: 2, NRanks: 8, NNodes: 1, Kind: Collective, Name: "AllReduce", Op: "all_reduce",
			Seq: 1407, HasSeq: true, MessageBytes: 17179869184,
			// Default layout: dump − exec … dump.
			StartNs: (1748030377748202 - 61974) * 1000, EndNs: 1748030377748202 * 1000,
			ExecTimeUs: 61974, TimingSource: "kernel_gpu", AlgoBWGBs: 277.210914, BusBWGBs: 485.119099,
			DumpTimestampUs: 1748030377748202, Version: "v4.0", Flags: FlagApproximateTime,
		},
		{
			Host: "node01", PID: 438776, CommID: "0xe62dedaa97644a", CommName: "DP Group 0",
			CommRank: 4, NRanks: 8, NNodes: 1, Kind: Collective, Name: "ReduceScatter", Op: "reduce_scatter",
			Seq: 1231, HasSeq: true, MessageBytes: 2147483648,
			// Verbose: coll_start_ts … the last kernel_stop_ts.
			StartNs: 1752867229235059 * 1000, EndNs: 1752867229275811 * 1000,
			ExecTimeUs: 41057, TimingSource: "kernel_gpu", AlgoBWGBs: 418.439467, BusBWGBs: 366.134533,
			DumpTimestampUs: 1752867229276385, Version: "v4.0",
		},
		{
			Host: "node01", PID: 438776, CommID: "0xe62dedaa97644a", CommName: "PP Group 0",
			CommRank: 4, NRanks: 8, NNodes: 1, Kind: P2P, Name: "Send", Op: "send",
			// The file's first transfer from comm rank 4 to 5.
			P2PSeq: 42, PairSeq: 0, HasPairSeq: true, MessageBytes: 33554432, Peer: 5, HasPeer: true,
			StartNs: 1752867229235059 * 1000, EndNs: 1752867229235340 * 1000,
			ExecTimeUs: 150, TimingSource: "kernel_gpu", AlgoBWGBs: 223.696213, BusBWGBs: 223.696213,
			DumpTimestampUs: 1752867229276385, Version: "v4.0",
		},
	}
	var p Parser
	for i, line := range lines {
		got, err := p.Parse(line)
		if err != nil {
			t.Fatalf("example %d: %v", i, err)
		}
		if got != want[i] {
			t.Errorf("example %d:\n got %+v\nwant %+v", i, got, want[i])
		}
	}
}

// variant edits the spec's verbose collective example (or, with p2p, the
// P2P one) by literal replacements, each of which must apply.
func variant(t *testing.T, p2p bool, repl ...string) []byte {
	t.Helper()
	line := string(specExamples(t)[1])
	if p2p {
		line = string(specExamples(t)[2])
	}
	for i := 0; i < len(repl); i += 2 {
		if !strings.Contains(line, repl[i]) {
			t.Fatalf("variant: %q not in the example", repl[i])
		}
		line = strings.Replace(line, repl[i], repl[i+1], 1)
	}
	return []byte(line)
}

func TestParseEdgeCases(t *testing.T) {
	tests := []struct {
		name  string
		line  []byte
		check func(t *testing.T, op Op)
	}{
		{"escaped slash in strings", variant(t, false, `"DP Group 0"`, `"DP\/TP Group 0"`, `"node01"`, `"rack\/node01"`),
			func(t *testing.T, op Op) {
				if op.CommName != "DP/TP Group 0" || op.Host != "rack/node01" {
					t.Fatalf("comm name %q host %q", op.CommName, op.Host)
				}
			}},
		{"unicode escapes and a surrogate pair", variant(t, false, `"DP Group 0"`, `"G\u00e9 \ud83d\ude00"`),
			func(t *testing.T, op Op) {
				if op.CommName != "Gé 😀" {
					t.Fatalf("comm name %q", op.CommName)
				}
			}},
		{"whitespace between tokens", []byte(strings.NewReplacer(":", " : ", ",", " ,\t", "{", "{ ").Replace(string(variant(t, false)))),
			func(t *testing.T, op Op) {
				if op.Seq != 1231 || op.EndNs != 1752867229275811*1000 {
					t.Fatalf("seq %d end %d", op.Seq, op.EndNs)
				}
			}},
		{"nan bandwidths", variant(t, false, `"coll_algobw_gbs":418.439467`, `"coll_algobw_gbs":"nan"`, `"coll_busbw_gbs":366.134533`, `"coll_busbw_gbs":"nan"`),
			func(t *testing.T, op Op) {
				if !math.IsNaN(op.AlgoBWGBs) || !math.IsNaN(op.BusBWGBs) || op.Flags&FlagNaNBandwidth == 0 {
					t.Fatalf("bandwidths %v %v flags %b", op.AlgoBWGBs, op.BusBWGBs, op.Flags)
				}
			}},
		{"bare inf bandwidth (printf %lf of an infinity)", variant(t, false, `"coll_algobw_gbs":418.439467`, `"coll_algobw_gbs":inf`),
			func(t *testing.T, op Op) {
				if !math.IsInf(op.AlgoBWGBs, 1) || op.Flags&FlagNaNBandwidth == 0 {
					t.Fatalf("algbw %v flags %b", op.AlgoBWGBs, op.Flags)
				}
			}},
		{"Invalid op name", variant(t, false, `"ReduceScatter"`, `"Invalid"`),
			func(t *testing.T, op Op) {
				if op.Name != "Invalid" || op.Op != "invalid" || op.Flags&FlagInvalidOp == 0 {
					t.Fatalf("name %q op %q flags %b", op.Name, op.Op, op.Flags)
				}
			}},
		{"wrapped uint8 size", variant(t, false, `"coll_msg_size_bytes":2147483648`, `"coll_msg_size_bytes":18446744073709543424`),
			func(t *testing.T, op Op) {
				// 2^64 − 8192: 8192 uint8 elements.
				if op.MessageBytes != 8192 || op.Flags&FlagWrappedSize == 0 {
					t.Fatalf("size %d flags %b", op.MessageBytes, op.Flags)
				}
			}},
		{"largest unwrapped size", variant(t, false, `"coll_msg_size_bytes":2147483648`, `"coll_msg_size_bytes":9223372036854775807`),
			func(t *testing.T, op Op) {
				if op.MessageBytes != math.MaxInt64 || op.Flags&FlagWrappedSize != 0 {
					t.Fatalf("size %d flags %b", op.MessageBytes, op.Flags)
				}
			}},
		{"p2p recv has a peer and no seq", variant(t, true, `"Send"`, `"Recv"`, `"p2p_peer":5`, `"p2p_peer":0`),
			func(t *testing.T, op Op) {
				if op.Kind != P2P || op.Op != "recv" || !op.HasPeer || op.Peer != 0 || op.HasSeq || op.P2PSeq != 42 {
					t.Fatalf("%+v", op)
				}
			}},
		{"missing verbose trace is the default layout", []byte(strings.Split(string(variant(t, false)), `,"event_trace_sn"`)[0] + "}}"),
			func(t *testing.T, op Op) {
				if !op.Approximate() || op.StartNs != (1752867229276385-41057)*1000 || op.EndNs != 1752867229276385*1000 {
					t.Fatalf("%+v", op)
				}
			}},
		{"trace without kernel events ends at start + exec time", variant(t, false, `,"kernel_events":[{"channel_id":0,"kernel_start_ts":1752867229235181,"kernel_stop_ts":1752867229275811,"kernel_record_ts":1752867229275811}]}`, `}`),
			func(t *testing.T, op Op) {
				if !op.Approximate() || op.StartNs != 1752867229235059*1000 || op.EndNs != (1752867229235059+41057)*1000 {
					t.Fatalf("%+v", op)
				}
			}},
		{"last kernel stop over channels", variant(t, false, `"kernel_record_ts":1752867229275811}]`, `"kernel_record_ts":1752867229275811},{"channel_id":1,"kernel_stop_ts":1752867229275999},{"channel_id":2,"kernel_stop_ts":1752867229270000}]`),
			func(t *testing.T, op Op) {
				if op.Approximate() || op.EndNs != 1752867229275999*1000 {
					t.Fatalf("%+v", op)
				}
			}},
		{"kernel stop before the start clamps to a zero-length op", variant(t, false, `"kernel_stop_ts":1752867229275811`, `"kernel_stop_ts":1752867229235000`),
			func(t *testing.T, op Op) {
				if op.EndNs != op.StartNs {
					t.Fatalf("start %d end %d", op.StartNs, op.EndNs)
				}
			}},
		{"unknown keys everywhere (fork additions)", variant(t, false,
			`{"header":{`, `{"extra":[1,{"a":[true,false,null]},-2.5e3],"header":{"tag":"x",`,
			`"coll_perf":{`, `"coll_perf":{"coll_algo":"RING","coll_proto":"SIMPLE","events":[{"x":1}],`,
			`"rec_mechanism"`, `"proxy":{"ops":[]},"rec_mechanism"`),
			func(t *testing.T, op Op) {
				if op.Seq != 1231 || op.CommName != "DP Group 0" {
					t.Fatalf("%+v", op)
				}
			}},
		{"later v4 version", variant(t, false, `"v4.0"`, `"v4.4"`),
			func(t *testing.T, op Op) {
				if op.Version != "v4.4" {
					t.Fatalf("version %q", op.Version)
				}
			}},
		{"truncated 14-hex-digit id kept as written", variant(t, false, `"0xe62dedaa97644a"`, `"0xe62dedaa97644"`),
			func(t *testing.T, op Op) {
				if op.CommID != "0xe62dedaa97644" {
					t.Fatalf("id %q", op.CommID)
				}
			}},
		{"no comm_name (NCCL before 2.30) and no nnodes", variant(t, false, `"comm_name":"DP Group 0",`, ``, `,"nnodes":1`, ``),
			func(t *testing.T, op Op) {
				if op.CommName != "" || op.NNodes != 0 {
					t.Fatalf("%+v", op)
				}
			}},
		{"trailing newline", append(variant(t, false), '\n'),
			func(t *testing.T, op Op) {}},
		{"largest seq", variant(t, false, `"coll_sn":1231`, `"coll_sn":9223372036854775807`),
			func(t *testing.T, op Op) {
				if op.Seq != math.MaxInt64 {
					t.Fatalf("seq %d", op.Seq)
				}
			}},
		{"duplicate key: the last wins", variant(t, false, `"coll_sn":1231`, `"coll_sn":1,"coll_sn":1231`),
			func(t *testing.T, op Op) {
				if op.Seq != 1231 {
					t.Fatalf("seq %d", op.Seq)
				}
			}},
		{"exec time equal to the dump time", []byte(strings.Split(string(variant(t, false, `"coll_exec_time_us":41057`, `"coll_exec_time_us":1752867229276385`)), `,"event_trace_sn"`)[0] + "}}"),
			func(t *testing.T, op Op) {
				if op.StartNs != 0 {
					t.Fatalf("start %d", op.StartNs)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			op, err := Parse(tc.line)
			if err != nil {
				t.Fatalf("%v\n%s", err, tc.line)
			}
			tc.check(t, op)
		})
	}
}

func TestParseErrors(t *testing.T) {
	var (
		syntax   *SyntaxError
		field    *FieldError
		version  *VersionError
		notOpRec = ErrNotOpRecord
	)
	tests := []struct {
		name      string
		line      []byte
		wantType  any    // *SyntaxError, *FieldError, *VersionError or ErrNotOpRecord
		wantField string // for a FieldError
	}{
		{"torn line", variant(t, false)[:300], &syntax, ""},
		{"empty line", []byte(""), &syntax, ""},
		{"trailing garbage", append(variant(t, false), []byte(" x")...), &syntax, ""},
		{"two records on a line", append(variant(t, false), variant(t, false)...), &syntax, ""},
		{"bad escape", variant(t, false, `"DP Group 0"`, `"DP\x"`), &syntax, ""},
		{"raw control character", variant(t, false, `"DP Group 0"`, "\"DP\tGroup\""), &syntax, ""},
		{"leading zero", variant(t, false, `"coll_sn":1231`, `"coll_sn":01231`), &syntax, ""},
		{"not an object", []byte(`[1,2,3]`), notOpRec, ""},
		{"object without perf section", variant(t, false, `"coll_perf"`, `"other_perf"`), notOpRec, ""},
		{"statistics line of a fork", []byte(`{"dump_stats":{"records":3}}`), notOpRec, ""},
		{"both perf sections", variant(t, false, `"coll_perf":{`, `"p2p_perf":{"p2p":"Send"},"coll_perf":{`), &field, "coll_perf"},
		{"other major version", variant(t, false, `"v4.0"`, `"v5.0"`), &version, ""},
		{"missing rank", variant(t, false, `"rank":4,`, ``), &field, "header.rank"},
		{"missing id", variant(t, false, `"id":"0xe62dedaa97644a",`, ``), &field, "header.id"},
		{"missing hostname", variant(t, false, `"hostname":"node01",`, ``), &field, "metadata.hostname"},
		{"missing pid", variant(t, false, `,"pid":438776`, ``), &field, "metadata.pid"},
		{"missing dump time", variant(t, false, `"dump_timestamp_us":1752867229276385,`, ``), &field, "metadata.dump_timestamp_us"},
		{"missing op name", variant(t, false, `"coll":"ReduceScatter",`, ``), &field, "coll_perf.coll"},
		{"missing coll_sn", variant(t, false, `"coll_sn":1231,`, ``), &field, "coll_perf.coll_sn"},
		{"missing size", variant(t, false, `"coll_msg_size_bytes":2147483648,`, ``), &field, "coll_perf.coll_msg_size_bytes"},
		{"missing exec time", variant(t, false, `"coll_exec_time_us":41057,`, ``), &field, "coll_perf.coll_exec_time_us"},
		{"missing peer", variant(t, true, `"p2p_peer":5,`, ``), &field, "p2p_perf.p2p_peer"},
		{"rank out of the communicator", variant(t, false, `"rank":4`, `"rank":8`), &field, "header.rank"},
		{"no ranks", variant(t, false, `"n_ranks":8`, `"n_ranks":0`), &field, "header.n_ranks"},
		{"peer out of the communicator", variant(t, true, `"p2p_peer":5`, `"p2p_peer":8`), &field, "p2p_perf.p2p_peer"},
		{"negative pid", variant(t, false, `"pid":438776`, `"pid":-1`), &field, "metadata.pid"},
		{"empty host", variant(t, false, `"hostname":"node01"`, `"hostname":""`), &field, "metadata.hostname"},
		{"string rank", variant(t, false, `"rank":4`, `"rank":"4"`), &field, "header.rank"},
		{"seq beyond int64", variant(t, false, `"coll_sn":1231`, `"coll_sn":9223372036854775808`), &field, "coll_perf.coll_sn"},
		{"negative seq", variant(t, false, `"coll_sn":1231`, `"coll_sn":-1`), &field, "coll_perf.coll_sn"},
		{"exponent in an integer", variant(t, false, `"rank":4`, `"rank":4e0`), &field, "header.rank"},
		{"fractional seq", variant(t, false, `"coll_sn":1231`, `"coll_sn":12.5`), &field, "coll_perf.coll_sn"},
		{"negative size", variant(t, false, `"coll_msg_size_bytes":2147483648`, `"coll_msg_size_bytes":-1`), &field, "coll_perf.coll_msg_size_bytes"},
		{"size beyond 64 bits", variant(t, false, `"coll_msg_size_bytes":2147483648`, `"coll_msg_size_bytes":18446744073709551616`), &field, "coll_perf.coll_msg_size_bytes"},
		{"bandwidth that is a word", variant(t, false, `"coll_busbw_gbs":366.134533`, `"coll_busbw_gbs":"fast"`), &field, "coll_perf.coll_busbw_gbs"},
		{"header not an object", variant(t, false, `"header":{"id":"0xe62dedaa97644a","comm_name":"DP Group 0","rank":4,"n_ranks":8,"nnodes":1}`, `"header":[]`), &field, "header"},
		{"kernel stop not a number", variant(t, false, `"kernel_stop_ts":1752867229275811`, `"kernel_stop_ts":null`), &field, "coll_perf.event_trace_ts.kernel_events[].kernel_stop_ts"},
		{"dump time beyond 2262", variant(t, false, `"dump_timestamp_us":1752867229276385`, `"dump_timestamp_us":9223372036854776`), &field, "metadata.dump_timestamp_us"},
		{"exec time past the dump time (default layout)", []byte(strings.Split(string(variant(t, false, `"coll_exec_time_us":41057`, `"coll_exec_time_us":1752867229276386`)), `,"event_trace_sn"`)[0] + "}}"), &field, "coll_perf.coll_exec_time_us"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.line)
			if err == nil {
				t.Fatalf("no error for %s", tc.line)
			}
			switch want := tc.wantType.(type) {
			case **SyntaxError:
				if !errors.As(err, want) {
					t.Fatalf("got %T %v, want a SyntaxError", err, err)
				}
			case **FieldError:
				if !errors.As(err, want) {
					t.Fatalf("got %T %v, want a FieldError", err, err)
				}
				if (*want).Field != tc.wantField {
					t.Fatalf("field %q (%v), want %q", (*want).Field, err, tc.wantField)
				}
			case **VersionError:
				if !errors.As(err, want) {
					t.Fatalf("got %T %v, want a VersionError", err, err)
				}
			case error:
				if !errors.Is(err, want) {
					t.Fatalf("got %v, want %v", err, want)
				}
			}
		})
	}
}

func TestOpName(t *testing.T) {
	for in, want := range map[string]string{
		"AllReduce": "all_reduce", "AllGather": "all_gather", "ReduceScatter": "reduce_scatter",
		"Broadcast": "broadcast", "Reduce": "reduce", "Send": "send", "Recv": "recv",
		"Invalid": "invalid", "All2All": "all_to_all", "AllGatherV": "all_gather",
		"SendRecv": "send_recv", "": "",
	} {
		if got := OpName(in); got != want {
			t.Errorf("OpName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParserReusesNothingAcrossRecords(t *testing.T) {
	// Interned strings must not alias the input line.
	var p Parser
	line := variant(t, false)
	op, err := p.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	for i := range line {
		line[i] = 'x'
	}
	if op.Host != "node01" || op.CommName != "DP Group 0" || op.Name != "ReduceScatter" {
		t.Fatalf("strings changed with the input: %+v", op)
	}
}

// The layouts of the plugin's later versions and of the forks: v4.1's
// proxy variant lists kernel channels under "events", a verbose record
// may have all-zero kernel times (REQUIRE_KERNEL_TIMING=0), and a fork
// writes the execution time as a double.
func TestParseLayoutVariants(t *testing.T) {
	const (
		startUs = 1752867229235059
		stopUs  = 1752867229275811
		execUs  = 41057
	)
	kernelEvents := `"kernel_events":[{"channel_id":0,"kernel_start_ts":1752867229235181,"kernel_stop_ts":1752867229275811,"kernel_record_ts":1752867229275811}]}`
	tests := []struct {
		name        string
		line        []byte
		wantEndNs   int64
		approximate bool
		wantExecUs  int64
	}{
		{"v4.1 proxy variant", variant(t, false, `"v4.0"`, `"v4.1"`, `,`+kernelEvents,
			`},"events":[{"event_type":"KernelCh","channel_id":0,"event_trace_sn":{"kernel_start_sn":3,"kernel_stop_sn":5,"kernel_record_sn":4},"event_trace_ts":{"kernel_start_ts":1752867229235181,"kernel_stop_ts":1752867229275811,"kernel_record_ts":1752867229275811}},{"event_type":"ProxyOp","proxy_id":9,"proxy_rank":4,"proxy_pid":438776,"proxy_start_ts":1752867229235200,"proxy_stop_ts":1752867229299999,"proxy_duration_us":64799,"proxy_states":[]}]`),
			stopUs * 1000, false, execUs},
		{"all-zero kernel events", variant(t, false, `"kernel_start_ts":1752867229235181,"kernel_stop_ts":1752867229275811,"kernel_record_ts":1752867229275811`,
			`"kernel_start_ts":0,"kernel_stop_ts":0,"kernel_record_ts":0`),
			(startUs + execUs) * 1000, true, execUs},
		{"exec time as a double", variant(t, false, `"coll_exec_time_us":41057`, `"coll_exec_time_us":41057.750000`),
			stopUs * 1000, false, execUs},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			op, err := Parse(tc.line)
			if err != nil {
				t.Fatal(err)
			}
			if op.StartNs != startUs*1000 || op.EndNs != tc.wantEndNs || op.Approximate() != tc.approximate || op.ExecTimeUs != tc.wantExecUs {
				t.Fatalf("start %d end %d approximate %v exec %d, want %d %d %v %d",
					op.StartNs, op.EndNs, op.Approximate(), op.ExecTimeUs, startUs*1000, tc.wantEndNs, tc.approximate, tc.wantExecUs)
			}
		})
	}
	for _, bad := range []string{`-1.5`, `1e300`, `"41057"`} {
		if _, err := Parse(variant(t, false, `"coll_exec_time_us":41057`, `"coll_exec_time_us":`+bad)); err == nil {
			t.Errorf("exec time %s accepted", bad)
		}
	}
}
