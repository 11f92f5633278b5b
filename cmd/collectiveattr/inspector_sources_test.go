package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/inspector"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// inspectorOp is a verbose Inspector record of rank's op at atNs lasting
// 150 ms, written 1 s later.
func inspectorOp(rank, nranks int, atNs int64, comm, name string, seq int64) inspector.Op {
	start := sourceT0Ns + atNs
	return inspector.Op{
		Host: "node0", PID: sourcePID(rank), CommID: comm, CommName: "unknown",
		CommRank: int64(rank), NRanks: int64(nranks), NNodes: 1, Kind: inspector.Collective,
		Name: name, Seq: seq, HasSeq: true, MessageBytes: 64 << 20,
		StartNs: start, EndNs: start + 150_000_000, ExecTimeUs: 150_000,
		DumpTimestampUs: (start + 1_000_000_000) / 1000,
	}
}

// writeInspectorLogs writes each rank's ops to <dir>/node0-pid<pid>.log.
func writeInspectorLogs(t *testing.T, dir string, ops []inspector.Op) {
	t.Helper()
	files := map[string][]byte{}
	for i := range ops {
		name := fmt.Sprintf("%s-pid%d.log", ops[i].Host, ops[i].PID)
		files[name] = inspector.RecordWriter{Verbose: true}.Append(files[name], &ops[i])
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The plugin prints AlltoAll and Gather alike as "Invalid", each with its
// own coll_sn counter: an all-to-all and a later gather with the same
// coll_sn are two ops, and a spike of one rank at the gather is no
// collective's.
func TestInspectorInvalidOpsNeverMerge(t *testing.T) {
	job := sourceRun{ranks: 4, spikes: []sourceSpike{
		{atNs: 20_000_000_000, ranks: []int{0, 1, 2, 3}},
		{atNs: 40_000_000_000, ranks: []int{0}},
	}}
	events := job.samples()
	path := tempPath(t, "run.jsonl")
	writeEvents(t, path, events)
	var ops []inspector.Op
	for r := 0; r < 4; r++ {
		ops = append(ops, inspectorOp(r, 4, 20_000_000_000, "0xabc", "Invalid", 5)) // AlltoAll
		ops = append(ops, inspectorOp(r, 4, 40_000_000_000, "0xabc", "Invalid", 5)) // Gather
	}
	dir := filepath.Join(t.TempDir(), "insp")
	writeInspectorLogs(t, dir, ops)

	results, _ := attributeRun(t, "--mode", "evidence", "--nccl-inspector", dir, path)
	if len(results) == 0 {
		t.Fatal("no results")
	}
	for _, r := range results {
		if r.Collective != nil {
			t.Errorf("result at %d rank %d names collective %+v: an Invalid op has no identity", r.StartNs-sourceT0Ns, r.Rank, *r.Collective)
		}
		if r.StartNs-sourceT0Ns > 30_000_000_000 && (r.Classification == "collective_likely" || r.Classification == "collective_confident") {
			t.Errorf("the lone spike at 40 s is %s %.3f", r.Classification, r.Confidence)
		}
	}
}

// One communicator whose hash two ranks' stormlog markers write in full
// and two ranks' Inspector records cut to 14 hex digits is one collective
// of 4 members.
func TestMixedSourceCommunicatorIsOneCollective(t *testing.T) {
	job := sourceRun{ranks: 4}
	for k := int64(0); k < 3; k++ {
		job.spikes = append(job.spikes, sourceSpike{atNs: 10_000_000_000 + k*15_000_000_000, ranks: []int{0, 1, 2, 3}})
	}
	events := job.samples()
	var ops []inspector.Op
	for k, sp := range job.spikes {
		for r := 0; r < 2; r++ {
			events = append(events, job.stormlogMarker(r, sp.atNs, "0x7f8c496ae9f661ab", "all_reduce", int64(k)))
		}
		for r := 2; r < 4; r++ {
			ops = append(ops, inspectorOp(r, 4, sp.atNs, "0x7f8c496ae9f661", "AllReduce", int64(k)))
		}
	}
	path := tempPath(t, "run.jsonl")
	writeEvents(t, path, sortedByTime(events))
	dir := filepath.Join(t.TempDir(), "insp")
	writeInspectorLogs(t, dir, ops)

	results, _ := attributeRun(t, "--mode", "evidence", "--nccl-inspector", dir, path)
	matched := 0
	for _, r := range results {
		if r.Collective == nil {
			continue
		}
		matched++
		if r.Collective.CommID != "0x7f8c496ae9f661ab" || r.Collective.CommRanks != 4 || r.Collective.Synchronized != 4 {
			t.Errorf("rank %d: collective %+v, want one of 4 members, all synchronized", r.Rank, *r.Collective)
		}
	}
	if matched != 12 {
		t.Fatalf("%d results name a collective, want 12 (3 spikes × 4 ranks): %+v", matched, results)
	}
}

func sortedByTime(events []telemetry.Event) []telemetry.Event {
	out := append([]telemetry.Event(nil), events...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].TimestampNs < out[j-1].TimestampNs; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// A directory of gzip-compressed logs, of .jsonl files, or of per-node
// subdirectories gives exactly what the plain directory gives; a
// directory with nothing readable is an error, not an empty run.
func TestInspectorDirectoryForms(t *testing.T) {
	job := sourceRun{ranks: 4}
	var ops []inspector.Op
	for k := int64(0); k < 3; k++ {
		at := 10_000_000_000 + k*15_000_000_000
		job.spikes = append(job.spikes, sourceSpike{atNs: at, ranks: []int{0, 1, 2, 3}})
		for r := 0; r < 4; r++ {
			ops = append(ops, inspectorOp(r, 4, at, "0x5eed", "AllReduce", k))
		}
	}
	path := tempPath(t, "run.jsonl")
	writeEvents(t, path, job.samples())
	plain := filepath.Join(t.TempDir(), "plain")
	writeInspectorLogs(t, plain, ops)
	entries, err := os.ReadDir(plain)
	if err != nil || len(entries) != 4 {
		t.Fatalf("%d logs: %v", len(entries), err)
	}

	forms := map[string]func(name string, data []byte) (string, []byte){
		"gzip": func(name string, data []byte) (string, []byte) { return name + ".gz", gzipBytes(t, data) },
		"jsonl": func(name string, data []byte) (string, []byte) {
			return strings.TrimSuffix(name, ".log") + ".jsonl", data
		},
		"jsonl.gz": func(name string, data []byte) (string, []byte) {
			return strings.TrimSuffix(name, ".log") + ".jsonl.gz", gzipBytes(t, data)
		},
		"per-node": func(name string, data []byte) (string, []byte) {
			return filepath.Join("node"+name[len(name)-5:len(name)-4], name), gzipBytes(t, data)
		},
	}
	for _, mode := range []string{"reference", "evidence"} {
		want := attributeOutput(t, "--mode", mode, "--nccl-inspector", plain, path)
		if !strings.Contains(want, `"collective`) {
			t.Fatalf("%s: the plain directory attributes nothing: %.200s", mode, want)
		}
		for name, form := range forms {
			dir := filepath.Join(t.TempDir(), "form")
			for _, e := range entries {
				data, err := os.ReadFile(filepath.Join(plain, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				rel, out := form(e.Name(), data)
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, rel), out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := attributeOutput(t, "--mode", mode, "--nccl-inspector", dir, path); got != want {
				t.Errorf("%s, %s directory: output differs from the plain directory's\n got %.300s\nwant %.300s", mode, name, got, want)
			}
		}
	}

	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"attribute", "--nccl-inspector", empty, path}, nil, &out, &errb)
	if code != exitInput || out.Len() != 0 || !strings.Contains(errb.String(), empty+" holds no *.log, *.log.gz, *.jsonl, *.jsonl.gz file") {
		t.Fatalf("directory with nothing readable: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

func gzipBytes(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func attributeOutput(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append([]string{"attribute"}, args...), nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	return out.String()
}
