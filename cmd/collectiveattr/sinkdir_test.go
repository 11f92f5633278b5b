package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/internal/eventgen"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// sortedKeys re-encodes a record with its keys sorted, as stormlog's sink
// writes it (json.dumps(..., sort_keys=True)).
func sortedKeys(t *testing.T, line []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(m) // maps marshal with sorted keys
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeSinkDir writes records as a sink directory of segments of n
// records each; the last segment gets tail appended.
func writeSinkDir(t *testing.T, dir string, jsonl []byte, n int, tail string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, telemetry.SinkManifest), []byte(`{"format": "stormlog.telemetry.sink", "segments": 0}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(jsonl), []byte("\n"))
	for seg := 0; seg*n < len(lines); seg++ {
		var b []byte
		for _, l := range lines[seg*n : min(len(lines), (seg+1)*n)] {
			b = append(b, sortedKeys(t, l)...)
			b = append(b, '\n')
		}
		if (seg+1)*n >= len(lines) {
			b = append(b, tail...)
		}
		// Unpadded numbers: segment-10 comes after segment-9.
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("segment-%d.jsonl", seg)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A sink directory gives what the same records as one JSON Lines file
// give, in both modes; a torn last line is dropped, a bad line elsewhere
// is an error naming the segment and the line.
func TestSinkDirectory(t *testing.T) {
	spec := eventgen.Default(4)
	spec.Samples = 300
	jsonl := eventgen.JSONL(spec)
	file := tempPath(t, "run.jsonl")
	if err := os.WriteFile(file, jsonl, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "sink")
	writeSinkDir(t, dir, jsonl, 97, `{"schema_version": 2, "timestamp_ns": 17`)
	if n, _ := filepath.Glob(filepath.Join(dir, "segment-*.jsonl")); len(n) < 11 {
		t.Fatalf("%d segments, want more than 10 to test their order", len(n))
	}
	for _, mode := range []string{"reference", "evidence"} {
		want := attributeOutput(t, "--mode", mode, file)
		if got := attributeOutput(t, "--mode", mode, dir); got != want || want == "[]\n" {
			t.Errorf("%s: the sink directory gives %.200s\nthe file %.200s", mode, got, want)
		}
	}

	bad := filepath.Join(t.TempDir(), "bad")
	writeSinkDir(t, bad, jsonl, 97, "")
	seg := filepath.Join(bad, "segment-3.jsonl")
	data, _ := os.ReadFile(seg)
	lines := strings.SplitN(string(data), "\n", 3)
	if err := os.WriteFile(seg, []byte(lines[0]+"\n{\"schema_version\": 2}\n"+lines[2]), 0o644); err != nil {
		t.Fatal(err)
	}
	noManifest := t.TempDir()
	for _, tc := range []struct{ name, dir, want string }{
		{"bad record", bad, seg + ": line 2: "},
		{"no manifest", noManifest, "is a directory but no stormlog sink directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run([]string{"attribute", tc.dir}, nil, &out, &errb)
			if code != exitInput || out.Len() != 0 || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 with %q", code, out.String(), errb.String(), tc.want)
			}
		})
	}
}
