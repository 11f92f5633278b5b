package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// report reads --torch-profiler and --flight-recorder as attribute does:
// one shaded result per result of attribute with the same flags, the
// sources' all_reduce markers on the page (absent without them), and the
// paths in the inputs table.
func TestReportTorchSources(t *testing.T) {
	job := sourceRun{ranks: 4}
	var at []int64
	var ops []kinetoOp
	for k := int64(0); k < 3; k++ {
		a := 10_000_000_000 + k*15_000_000_000
		at = append(at, a)
		job.spikes = append(job.spikes, sourceSpike{atNs: a, ranks: []int{0, 1, 2, 3}})
		ops = append(ops, kinetoOp{atNs: a, seq: k + 1})
	}
	path := tempPath(t, "run.jsonl")
	writeEvents(t, path, job.samples())
	traces := filepath.Join(t.TempDir(), "traces")
	writeTraces(t, traces, 4, ops, true)
	dumps := filepath.Join(t.TempDir(), "fr")
	writeDumps(t, dumps, 4, at, 5)

	for _, mode := range []string{"reference", "evidence"} {
		if page := reportPage(t, "--mode", mode, path); strings.Contains(page, "all_reduce") {
			t.Fatalf("%s: all_reduce on the page without a marker source", mode)
		}
		for _, sources := range [][]string{
			{"--torch-profiler", traces},
			{"--flight-recorder", dumps},
			{"--torch-profiler", traces, "--flight-recorder", dumps, "--phases"},
		} {
			args := append(append([]string{"--mode", mode}, sources...), path)
			var results []map[string]any
			if err := json.Unmarshal([]byte(runInProcess(t, append([]string{"attribute"}, args...)...)), &results); err != nil {
				t.Fatal(err)
			}
			if len(results) == 0 {
				t.Fatalf("%v: attribute found nothing", args)
			}
			page := reportPage(t, args...)
			if got := shadedResults(page); got != len(results) {
				t.Errorf("%v: %d shaded results, want attribute's %d", args, got, len(results))
			}
			if !strings.Contains(page, "all_reduce") {
				t.Errorf("%v: no all_reduce marker on the page", args)
			}
			for i := 0; i+1 < len(sources); i += 2 {
				key := strings.ReplaceAll(strings.TrimPrefix(sources[i], "--"), "-", "_")
				if row := "<th>" + key + "</th><td>" + sources[i+1] + "</td>"; !strings.Contains(page, row) {
					t.Errorf("%v: the inputs table lacks %s", args, row)
				}
			}
		}
	}
}
