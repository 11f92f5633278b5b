package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/inspector"
	"github.com/collectiveattr/collectiveattr/internal/conformance"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// inspectorCase is a conformance case with its markers moved out of the
// stormlog input into Inspector logs.
type inspectorCase struct {
	stormlog  string // the case's records without its markers
	inspector string // directory of <host>-pid<pid>.log files
	// floored is the case's records with every marker time rounded down to
	// the µs, as an Inspector record carries it.
	floored string
	aligned bool // every marker time was already a whole µs
	markers int
}

// splitCase writes the files of an inspectorCase for c into dir. Every
// (job, rank) gets a pid of its own first: the hand-written cases give all
// ranks host "test" and pid 1, a process the join would rightly refuse as
// claimed by several ranks; attribution does not read the pid.
func splitCase(t *testing.T, c conformance.Case, dir string) (inspectorCase, bool) {
	t.Helper()
	f, err := os.Open(c.EventsPath())
	if err != nil {
		t.Fatal(err)
	}
	events, err := telemetry.ReadAuto(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	type rankKey struct {
		job  string
		rank int64
	}
	pids := map[rankKey]int64{}
	for i := range events {
		e := &events[i]
		k := rankKey{e.JobID, e.Rank}
		if _, ok := pids[k]; !ok {
			pids[k] = int64(1000 + len(pids))
		}
		e.PID = pids[k]
	}

	ic := inspectorCase{
		stormlog:  filepath.Join(dir, "events.jsonl"),
		inspector: filepath.Join(dir, "inspector"),
		floored:   filepath.Join(dir, "floored.jsonl"),
		aligned:   true,
	}
	if err := os.Mkdir(ic.inspector, 0o755); err != nil {
		t.Fatal(err)
	}
	var kept, floored []byte
	logs := map[string][]byte{}
	for i := range events {
		e := events[i]
		if !attribution.IsMarker(&e) || attribution.IsSample(&e) {
			kept = telemetry.AppendJSON(kept, &e)
			kept = append(kept, '\n')
			floored = telemetry.AppendJSON(floored, &e)
			floored = append(floored, '\n')
			continue
		}
		ic.markers++
		ic.aligned = ic.aligned && e.TimestampNs%1000 == 0
		e.TimestampNs -= e.TimestampNs % 1000
		floored = telemetry.AppendJSON(floored, &e)
		floored = append(floored, '\n')
		// A zero-length op: the record gives one marker at its start.
		op := inspector.Op{
			Host: e.Host, PID: e.PID, CommID: "0x5eed", CommName: "world",
			CommRank: e.Rank, NRanks: e.WorldSize, NNodes: 1,
			Kind: inspector.Collective, Name: "AllReduce", Op: "all_reduce", Seq: int64(ic.markers), HasSeq: true,
			MessageBytes: 8192, StartNs: e.TimestampNs, EndNs: e.TimestampNs, DumpTimestampUs: e.TimestampNs / 1000,
		}
		name := fmt.Sprintf("%s-pid%d.log", e.Host, e.PID)
		logs[name] = inspector.RecordWriter{Verbose: true}.Append(logs[name], &op)
	}
	if ic.markers == 0 {
		return ic, false
	}
	for name, data := range logs {
		if err := os.WriteFile(filepath.Join(ic.inspector, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(ic.stormlog, kept, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ic.floored, floored, 0o644); err != nil {
		t.Fatal(err)
	}
	return ic, true
}

func caseArgs(c conformance.Case) []string {
	var args []string
	if c.Preset != nil {
		args = append(args, "--preset", *c.Preset)
	}
	if len(c.OverridesJSON) > 0 {
		args = append(args, "--overrides", string(c.OverridesJSON))
	}
	return args
}

func runInProcess(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(args, nil, &stdout, &stderr); code != 0 || nonSummary(stderr.String()) != "" {
		t.Fatalf("%v: exit %d, stderr %q", args, code, stderr.String())
	}
	return stdout.String()
}

// TestInspectorMarkersCountAsStormlogMarkers: moving a conformance case's
// markers into Inspector logs (one zero-length op per marker, in the
// verbose layout) and reading them back with --nccl-inspector gives the
// case's results. Inspector records hold µs: where every marker time is a
// whole µs (the hand-written cases) the results must equal the golden
// ones; elsewhere (the random cases, whose markers fall on any ns) they must
// equal the results of the case with its marker times rounded down to the
// µs, i.e. an Inspector marker counts exactly as a stormlog marker at the
// time the record can carry.
func TestInspectorMarkersCountAsStormlogMarkers(t *testing.T) {
	cases, err := conformance.Load("attribution")
	if err != nil {
		t.Fatal(err)
	}
	var golden, floored, sameAsGolden int
	for _, c := range cases {
		if c.ExpectedError != nil {
			continue
		}
		t.Run(filepath.Base(c.Dir), func(t *testing.T) {
			ic, ok := splitCase(t, c, t.TempDir())
			if !ok {
				t.Skip("no markers to move")
			}
			args := append([]string{"attribute", "--nccl-inspector", ic.inspector, ic.stormlog}, caseArgs(c)...)
			got := runInProcess(t, args...)
			want := []byte(c.Expected)
			if ic.aligned {
				golden++
			} else {
				floored++
				want = []byte(runInProcess(t, append([]string{"attribute", ic.floored}, caseArgs(c)...)...))
				if conformance.CompareJSON(c.Expected, want) == "" {
					sameAsGolden++
				}
			}
			if d := conformance.CompareJSON(want, []byte(got)); d != "" {
				t.Fatalf("%d markers via Inspector logs: %s\ngot: %s", ic.markers, d, got)
			}
		})
	}
	t.Logf("%d cases against their golden results, %d against their µs-rounded selves (%d of which still equal the golden results)",
		golden, floored, sameAsGolden)
	if golden == 0 || floored == 0 {
		t.Fatalf("%d µs-aligned and %d other cases with markers: the shared cases changed", golden, floored)
	}
}

func TestInspectorFlag(t *testing.T) {
	dir := t.TempDir()
	sample := func(host string, pid, rank, ts int64, used int64) string {
		return fmt.Sprintf(`{"schema_version":2,"timestamp_ns":%d,"event_type":"sample","collector":"c","sampling_interval_ms":100,"pid":%d,"host":%q,"job_id":"j","rank":%d,"local_rank":%d,"world_size":2,"device_id":%d,"allocator_allocated_bytes":1000,"allocator_reserved_bytes":1000,"allocator_active_bytes":null,"allocator_inactive_bytes":null,"allocator_change_bytes":0,"device_used_bytes":%d,"device_free_bytes":null,"device_total_bytes":null,"context":null,"metadata":{}}`,
			ts, pid, host, rank, rank, rank, used)
	}
	// Two ranks, 12 samples each, both spiking at sample 8.
	var lines []string
	for i := range int64(12) {
		for r := range int64(2) {
			used := int64(1100)
			if i == 8 {
				used = 5_000_000_000
			}
			lines = append(lines, sample("node01", 100+r, r, 1_700_000_000_000_000_000+i*100_000_000+r*1000, used))
		}
	}
	stormlog := filepath.Join(dir, "run.jsonl")
	if err := os.WriteFile(stormlog, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	record := func(pid, rank, startUs int64) []byte {
		op := inspector.Op{
			Host: "node01", PID: pid, CommID: "0xabc", CommName: "world", CommRank: rank, NRanks: 2, NNodes: 1,
			Kind: inspector.Collective, Name: "AllReduce", Op: "all_reduce", Seq: 1, HasSeq: true, MessageBytes: 1 << 20,
			StartNs: startUs * 1000, EndNs: (startUs + 500) * 1000, ExecTimeUs: 500, DumpTimestampUs: startUs + 600,
		}
		return inspector.RecordWriter{Verbose: true}.Append(nil, &op)
	}
	logs := filepath.Join(dir, "logs")
	other := filepath.Join(dir, "other")
	for _, d := range []string{logs, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spikeUs := int64(1_700_000_000_000_000) + 8*100_000
	write := func(path string, data ...[]byte) string {
		if err := os.WriteFile(path, bytes.Join(data, nil), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	rank0 := write(filepath.Join(logs, "node01-pid100.log"), record(100, 0, spikeUs), []byte("{\"torn\":\n"))
	rank1 := write(filepath.Join(other, "node01-pid101.log"), record(101, 1, spikeUs))
	write(filepath.Join(other, "notes.txt"), []byte("not a log\n"))
	stray := write(filepath.Join(dir, "node09-pid7.log"), record(7, 0, spikeUs))

	classOf := func(stdout string) string {
		if stdout == "[]\n" {
			return "none"
		}
		for _, c := range []string{"collective_confident", "collective_likely", "collective_suspect"} {
			if strings.Count(stdout, c) == 2 {
				return c
			}
		}
		return stdout
	}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantClass  string
		wantStderr []string
	}{
		{"without markers the spike is not reported", []string{stormlog}, 0, "none", nil},
		{"markers of both ranks from a file and a directory", []string{"--nccl-inspector", rank1, "--nccl-inspector", logs, stormlog}, 0, "collective_confident",
			[]string{"1 lines skipped as unreadable (first: " + rank0 + ": line 2: "}},
		{"a record of an unknown process is counted", []string{"--nccl-inspector", other, "--nccl-inspector", stray, stormlog}, 0, "",
			[]string{"1 of 2 records not joined to a rank (1 name a host and pid that no record of FILE has, 0 one that several ranks have)"}},
		{"missing path", []string{"--nccl-inspector", filepath.Join(dir, "nope"), stormlog}, 1, "", []string{"--nccl-inspector: ", "no such file"}},
		{"empty path", []string{"--nccl-inspector=", stormlog}, 2, "", []string{"empty path"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"attribute"}, tc.args...), nil, &stdout, &stderr)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.wantCode, stderr.String())
			}
			if tc.wantClass != "" {
				if got := classOf(stdout.String()); got != tc.wantClass {
					t.Fatalf("results %s, want both ranks %s", got, tc.wantClass)
				}
			}
			for _, s := range tc.wantStderr {
				if !strings.Contains(stderr.String(), s) {
					t.Fatalf("stderr %q does not contain %q", stderr.String(), s)
				}
			}
			if len(tc.wantStderr) == 0 && nonSummary(stderr.String()) != "" {
				t.Fatalf("stderr %q", stderr.String())
			}
		})
	}
}
