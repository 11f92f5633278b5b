package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flightDump writes rank's Flight Recorder dump as _dump_nccl_trace_json
// lays it out: one all_reduce entry per op, enqueued 2 ms before it runs
// and seen complete by the watchdog 250 ms later, numbered from seq0.
func flightDump(rank, world int, atNs []int64, seq0 int64) []byte {
	ranks := make([]string, world)
	for i := range ranks {
		ranks[i] = fmt.Sprint(i)
	}
	var entries []string
	for i, at := range atNs {
		created := sourceT0Ns + at - 2_000_000
		entries = append(entries, fmt.Sprintf(`{"record_id": %d, "pg_id": 0, "process_group": ["0", "default_pg"], "thread_id": "139990000000000", "thread_name": "MainThread", "collective_seq_id": %d, "p2p_seq_id": 0, "op_id": %d, "profiling_name": "nccl:all_reduce", "time_created_ns": %d, "input_sizes": [[16777216]], "input_dtypes": ["Float"], "output_sizes": [[16777216]], "output_dtypes": ["Float"], "state": "completed", "time_discovered_started_ns": 0, "time_discovered_completed_ns": %d, "retired": true, "timeout_ms": 600000, "is_p2p": false}`,
			i, seq0+int64(i), seq0+int64(i), created, created+250_000_000))
	}
	return []byte(fmt.Sprintf(`{"version": "2.10", "comm_lib_version": "2.21.5", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[%s]"}}, "pg_status": {"0": {"last_enqueued_collective": "%d", "last_started_collective": "-1", "last_completed_collective": "%d"}}, "entries": [%s]}`,
		strings.Join(ranks, ", "), len(atNs), len(atNs), strings.Join(entries, ", ")))
}

func writeDumps(t *testing.T, dir string, world int, atNs []int64, seq0 int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < world; r++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("nccl_trace_rank_%d", r)), flightDump(r, world, atNs, seq0), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Flight Recorder dumps alone: approximate markers with identity, and the
// spikes at the all_reduces are their collectives. With bare profiler
// traces, the traces' markers (well timed) take the dumps' identity and
// the dumps add no second marker of the same op.
func TestFlightRecorderIdentity(t *testing.T) {
	job := sourceRun{ranks: 4}
	var at []int64
	var ops []kinetoOp
	for k := int64(0); k < 3; k++ {
		a := 10_000_000_000 + k*15_000_000_000
		at = append(at, a)
		job.spikes = append(job.spikes, sourceSpike{atNs: a, ranks: []int{0, 1, 2, 3}})
		ops = append(ops, kinetoOp{atNs: a, seq: -1})
	}
	path := tempPath(t, "run.jsonl")
	writeEvents(t, path, job.samples())
	dumps := filepath.Join(t.TempDir(), "fr")
	writeDumps(t, dumps, 4, at, 5)
	traces := filepath.Join(t.TempDir(), "traces")
	writeTraces(t, traces, 4, ops, true)

	for _, args := range [][]string{
		{"--flight-recorder", dumps},
		{"--flight-recorder", dumps, "--torch-profiler", traces},
	} {
		results, _ := attributeRun(t, append([]string{"--mode", "evidence"}, append(args, path)...)...)
		perSeq := map[int64]int{}
		for _, r := range results {
			if r.Collective == nil {
				continue
			}
			c := r.Collective
			if c.CommID != "0" || c.Op != "all_reduce" || c.CommRanks != 4 || c.Synchronized != 4 {
				t.Errorf("%v: rank %d: collective %+v", args, r.Rank, *c)
			}
			perSeq[c.Seq]++
		}
		if len(perSeq) != 3 || perSeq[5] != 4 || perSeq[6] != 4 || perSeq[7] != 4 {
			t.Errorf("%v: results per seq %v, want 4 each for 5, 6, 7", args, perSeq)
		}
	}

	// The combined run's markers: the traces' times, the dumps' identity,
	// one per op and rank.
	var src markerSources
	src.torchProfiler, src.flightRecorder = pathList{traces}, pathList{dumps}
	if err := src.load(io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, e := range job.samples() {
		src.torch.owners.learn(&e)
	}
	events := src.torch.events("evidence", false, io.Discard)
	if len(events) != 12 {
		t.Fatalf("%d markers, want 12 (3 ops × 4 ranks)", len(events))
	}
	for _, e := range events {
		seq, _ := e.Metadata["nccl.seq"].(json.Number).Int64()
		at := at[seq-5]
		if e.TimestampNs != sourceT0Ns+at || e.Metadata["nccl.time_approximate"] != nil || e.Collector != "torch_profiler" {
			t.Fatalf("marker %+v: want the trace's kernel time %d, not approximate", e, sourceT0Ns+at)
		}
	}
}

func TestFlightRecorderBadDumps(t *testing.T) {
	path := tempPath(t, "run.jsonl")
	writeEvents(t, path, sourceRun{ranks: 2}.samples())
	pickled := t.TempDir()
	if err := os.WriteFile(filepath.Join(pickled, "nccl_trace_rank_0"), []byte("\x80\x04\x95\x10\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	torn := t.TempDir()
	dump := flightDump(0, 2, []int64{1_000_000_000}, 0)
	if err := os.WriteFile(filepath.Join(torn, "nccl_trace_rank_0.json"), dump[:len(dump)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	unnamed := t.TempDir()
	if err := os.WriteFile(filepath.Join(unnamed, "dump.json"), dump, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dir, want string }{
		{"pickle", pickled, "nccl_trace_rank_0: a pickle (Flight Recorder's default dump format), not JSON"},
		{"torn", torn, "nccl_trace_rank_0.json: line 1: "},
		{"no rank in the name", unnamed, "the file name does not end with the rank"},
		{"empty directory", t.TempDir(), "holds no file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run([]string{"attribute", "--flight-recorder", tc.dir, path}, nil, &out, &errb)
			if code != exitInput || out.Len() != 0 || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 with %q", code, out.String(), errb.String(), tc.want)
			}
		})
	}
}
