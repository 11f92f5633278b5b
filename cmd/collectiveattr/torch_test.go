package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// kinetoOp is one collective of a rank's trace.
type kinetoOp struct {
	atNs      int64 // offset from sourceT0Ns of its kernel
	seq       int64 // -1: the trace carries no Seq (older PyTorch)
	allocated int64 // [memory] Total Allocated before it (0: no event)
	reserved  int64
}

// kinetoTrace writes a trace of rank as Kineto lays it out (times in µs
// after baseTimeNanoseconds, written "µs.ns"): a ProfilerStep range per
// op, the record_param_comms CPU op enqueuing it 2 ms before its NCCL
// kernel, which runs 150 ms, and a [memory] event when asked.
func kinetoTrace(rank, world int, ops []kinetoOp, withRank bool) []byte {
	base := sourceT0Ns - 5_000_000_000
	ts := func(ns int64) string { ns -= base; return fmt.Sprintf("%d.%03d", ns/1000, ns%1000) }
	var b strings.Builder
	ranks := make([]string, world)
	for i := range ranks {
		ranks[i] = fmt.Sprint(i)
	}
	groupRanks := "[" + strings.Join(ranks, ", ") + "]"
	b.WriteString("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n")
	b.WriteString("  \"displayTimeUnit\": \"ms\",\n")
	fmt.Fprintf(&b, "  \"baseTimeNanoseconds\": %d,\n  \"traceEvents\": [\n", base)
	pid := sourcePID(rank)
	for i, op := range ops {
		at := sourceT0Ns + op.atNs
		ext := 100 + i
		seq := ""
		if op.seq >= 0 {
			seq = fmt.Sprintf(`, "Seq": %d`, op.seq)
		}
		fmt.Fprintf(&b, "  {\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%d\", \"pid\": %d, \"tid\": %d,\n    \"ts\": %s, \"dur\": %s,\n    \"args\": {\n      \"External id\": %d, \"Record function id\": 0, \"Ev Idx\": %d\n    }\n  },\n",
			i, pid, pid, ts(at-1_000_000_000), ts(sourceT0Ns+2_000_000_000), 10_000+i, 3*i)
		if op.reserved > 0 {
			fmt.Fprintf(&b, "  {\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": %d, \"tid\": %d,\n    \"ts\": %s,\n    \"args\": {\n      \"Device Type\": 1, \"Device Id\": %d, \"Addr\": 140000000000, \"Bytes\": 1024, \"Total Allocated\": %d, \"Total Reserved\": %d, \"Ev Idx\": %d\n    }\n  },\n",
				pid, pid, ts(at-900_000_000), rank, op.allocated, op.reserved, 3*i+1)
		}
		fmt.Fprintf(&b, "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": %d, \"tid\": %d,\n    \"ts\": %s, \"dur\": 40.125,\n    \"args\": {\n      \"External id\": %d, \"Record function id\": 0, \"Ev Idx\": %d, \"Rank\": %d, \"Collective name\": \"allreduce\", \"dtype\": \"Float\", \"In msg nelems\": 16777216, \"Out msg nelems\": 16777216, \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Global rank start\": 0, \"Global rank stride\": 1, \"Group size\": %d, \"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", \"Process Group Ranks\": \"%s\"%s\n    }\n  },\n",
			pid, pid, ts(at-2_000_000), ext, 3*i+2, rank, world, groupRanks, seq)
		fmt.Fprintf(&b, "  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)\", \"pid\": %d, \"tid\": 7,\n    \"ts\": %s, \"dur\": 150000.000,\n    \"args\": {\n      \"External id\": %d, \"queued\": 0, \"device\": %d, \"context\": 1, \"stream\": 7, \"correlation\": %d, \"Collective name\": \"allreduce\", \"In msg nelems\": 16777216, \"Out msg nelems\": 16777216, \"Group size\": %d, \"dtype\": \"Float\", \"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", \"Process Group Ranks\": \"%s\"%s\n    }\n  },\n",
			rank, ts(at), ext, rank, 500+i, world, groupRanks, seq)
	}
	fmt.Fprintf(&b, "  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", \"ts\": %s\n  }\n  ],\n", ts(sourceT0Ns+60_000_000_000))
	if withRank {
		fmt.Fprintf(&b, "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d, \"pg_count\": 1, \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", \"pg_size\": %d, \"ranks\": \"%s\"}], \"nccl_version\": \"2.21.5\"},", rank, world, world, groupRanks)
	}
	fmt.Fprintf(&b, "\"traceName\": \"rank%d.pt.trace.json\" }", rank)
	return []byte(b.String())
}

func writeTraces(t *testing.T, dir string, world int, ops []kinetoOp, withRank bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < world; r++ {
		// tensorboard_trace_handler's names: <worker>.<ms>.pt.trace.json
		name := filepath.Join(dir, fmt.Sprintf("node0_%d.1767225600000.pt.trace.json", sourcePID(r)))
		if !withRank {
			name = filepath.Join(dir, fmt.Sprintf("trace-rank%d.json", r))
		}
		if err := os.WriteFile(name, kinetoTrace(r, world, ops, withRank), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Spikes at NCCL all_reduces are found through --torch-profiler alone: the
// trace's Seq and process group make each a collective of 4 members in
// evidence mode, and its kernels are the reference mode's markers.
func TestTorchProfilerMarkers(t *testing.T) {
	job := sourceRun{ranks: 4}
	var ops []kinetoOp
	for k := int64(0); k < 3; k++ {
		at := 10_000_000_000 + k*15_000_000_000
		job.spikes = append(job.spikes, sourceSpike{atNs: at, ranks: []int{0, 1, 2, 3}})
		ops = append(ops, kinetoOp{atNs: at, seq: k + 1})
	}
	path := tempPath(t, "run.jsonl")
	writeEvents(t, path, job.samples())
	dir := filepath.Join(t.TempDir(), "traces")
	writeTraces(t, dir, 4, ops, true)

	results, _ := attributeRun(t, "--mode", "evidence", "--torch-profiler", dir, path)
	found := map[int64]int{}
	for _, r := range results {
		if r.Collective == nil {
			continue
		}
		c := r.Collective
		if c.CommID != "0" || c.Op != "all_reduce" || c.CommRanks != 4 || c.Synchronized != 4 {
			t.Errorf("rank %d: collective %+v", r.Rank, *c)
		}
		found[c.Seq]++
	}
	if len(found) != 3 || found[1] != 4 || found[2] != 4 || found[3] != 4 {
		t.Fatalf("results per Seq %v, want 4 for each of 1, 2, 3: %+v", found, results)
	}

	without := attributeOutput(t, path)
	with := attributeOutput(t, "--torch-profiler", dir, path)
	if strings.Count(with, `"marker_collective_token"`) < 12 || strings.Contains(without, `"marker_collective_token"`) {
		t.Fatalf("reference mode: without the trace %.300s\nwith it %.300s", without, with)
	}

	// An older trace without Seq: bare markers, still found; the rank
	// comes from the file name when the trace has no distributedInfo.
	for i := range ops {
		ops[i].seq = -1
	}
	bare := filepath.Join(t.TempDir(), "bare")
	writeTraces(t, bare, 4, ops, false)
	results, _ = attributeRun(t, "--mode", "evidence", "--torch-profiler", bare, path)
	likely := 0
	for _, r := range results {
		if r.Collective != nil {
			t.Fatalf("a bare marker named collective %+v", *r.Collective)
		}
		if strings.HasPrefix(r.Classification, "collective") {
			likely++
		}
	}
	if likely == 0 {
		t.Fatalf("no spike found through bare markers: %+v", results)
	}
}

// Samples of a device-only sampler (v4, allocator counters null) take the
// allocator side from the trace's [memory] events.
func TestTorchProfilerMemoryFillsSamples(t *testing.T) {
	job := sourceRun{ranks: 2}
	var ops []kinetoOp
	for k := int64(0); k < 3; k++ {
		at := 10_000_000_000 + k*15_000_000_000
		job.spikes = append(job.spikes, sourceSpike{atNs: at, ranks: []int{0, 1}})
		ops = append(ops, kinetoOp{atNs: at, seq: k, allocated: 7 << 30, reserved: 8 << 30})
	}
	ops[0].atNs = 1_000_000_000 // the first [memory] event comes before every sample's spike
	job.spikes[0].atNs = 1_000_000_000
	var events []telemetry.Event
	for _, e := range job.samples() {
		e.SchemaVersion, e.SessionID = 4, fmt.Sprintf("sess-%d", e.Rank)
		reserved := e.AllocatorReservedBytes.Value
		e.AllocatorReservedBytes, e.AllocatorAllocatedBytes, e.AllocatorChangeBytes = telemetry.OptInt{}, telemetry.OptInt{}, telemetry.OptInt{}
		e.DeviceUsedBytes = telemetry.Int(e.DeviceUsedBytes.Value - reserved + 8<<30)
		e.Metadata = map[string]any{"memory_capabilities": map[string]any{
			"backend": "cuda", "telemetry_collector": "dcgm", "sampling_source": "nvml",
			"supports_allocator_allocated": false, "supports_allocator_reserved": false, "supports_allocator_active": false,
			"supports_allocator_inactive": false, "supports_device_used": true, "supports_device_free": true,
			"supports_device_total": true, "supports_native_allocator_history": false, "supports_fragmentation_analysis": false,
			"supports_allocator_attribution": false, "supports_bounded_profiling": false,
		}}
		events = append(events, e)
	}
	path := tempPath(t, "run.jsonl")
	writeEvents(t, path, events)
	dir := filepath.Join(t.TempDir(), "traces")
	writeTraces(t, dir, 2, ops, true)

	if out := attributeOutput(t, "--mode", "evidence", path); out != "[]\n" {
		t.Fatalf("without the trace the records are no samples, yet: %.200s", out)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"attribute", "--mode", "evidence", "--torch-profiler", dir, path}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"collective":{"comm_id":"0","op":"all_reduce","seq":1`) || !strings.Contains(errb.String(), "samples took their allocator figures from [memory] events") {
		t.Fatalf("stdout %.400s\nstderr %s", out.String(), errb.String())
	}
}

func TestTorchProfilerBadTraces(t *testing.T) {
	path := tempPath(t, "run.jsonl")
	writeEvents(t, path, sourceRun{ranks: 2}.samples())
	dir := t.TempDir()
	good := kinetoTrace(0, 2, []kinetoOp{{atNs: 1_000_000_000, seq: 0}}, true)
	torn := filepath.Join(dir, "torn.json")
	if err := os.WriteFile(torn, good[:len(good)-40], 0o644); err != nil {
		t.Fatal(err)
	}
	noRank := filepath.Join(t.TempDir(), "trace.json")
	if err := os.WriteFile(noRank, kinetoTrace(0, 2, nil, false), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, arg, want string }{
		{"torn trace", torn, "torn.json: line 33: "},
		{"no rank anywhere", noRank, "the trace names no rank"},
		{"empty directory", t.TempDir(), "holds no *.json, *.json.gz file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run([]string{"attribute", "--torch-profiler", tc.arg, path}, nil, &out, &errb)
			if code != exitInput || out.Len() != 0 || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 with %q", code, out.String(), errb.String(), tc.want)
			}
		})
	}
}

// With --phases, a trace's ProfilerStep ranges are its rank's phases.
func TestTorchProfilerPhases(t *testing.T) {
	job := sourceRun{ranks: 2, spikes: []sourceSpike{{atNs: 10_000_000_000, ranks: []int{0, 1}}}}
	var events []telemetry.Event
	for _, e := range job.samples() {
		e.SchemaVersion, e.SessionID = 3, fmt.Sprintf("sess-%d", e.Rank)
		events = append(events, e)
	}
	path := tempPath(t, "run.jsonl")
	writeEvents(t, path, events)
	dir := filepath.Join(t.TempDir(), "traces")
	writeTraces(t, dir, 2, []kinetoOp{{atNs: 10_000_000_000, seq: 0}}, true)
	out := attributeOutput(t, "--phases", "--torch-profiler", dir, path)
	if strings.Count(out, `"phase_path":"ProfilerStep#0"`) != 2 {
		t.Fatalf("output %.600s", out)
	}
	if plain := attributeOutput(t, "--phases", path); strings.Contains(plain, "ProfilerStep") {
		t.Fatalf("phases without the trace: %.300s", plain)
	}
}

// An event of the wrong shape is skipped and counted, naming the file and
// the line where it ends; the rest of the trace is read.
func TestTorchProfilerSkippedEvent(t *testing.T) {
	path := tempPath(t, "run.jsonl")
	writeEvents(t, path, sourceRun{ranks: 2}.samples())
	dir := t.TempDir()
	trace := strings.Replace(string(kinetoTrace(0, 2, []kinetoOp{{atNs: 1_000_000_000, seq: 0}, {atNs: 2_000_000_000, seq: 1}}, true)),
		`"ph": "X", "cat": "kernel"`, `"ph": "X", "cat": 7`, 1)
	file := filepath.Join(dir, "rank0.json")
	if err := os.WriteFile(file, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"attribute", "--torch-profiler", dir, path}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := file + `: 1 events skipped (first: line 27: event "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)": cat is not a string)`; !strings.Contains(errb.String(), want) {
		t.Fatalf("stderr %q, want %q", errb.String(), want)
	}
}
