package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/internal/eventgen"
	"github.com/collectiveattr/collectiveattr/internal/scale"
)

// scaleSpec is the job of the CLI's scale benchmark at ranks: 10 s at
// 10 Hz (100 samples per rank) with a world all_reduce, its identity on
// every marker, at 5 % of the steps.
func scaleSpec(ranks int, lists eventgen.Lists) eventgen.Spec {
	return eventgen.Spec{Ranks: ranks, Samples: 100, SpikeRate: 0.05, Markers: true, Identity: true, Lists: lists, Seed: 1}
}

// BenchmarkScaleAttributeCommand runs `collectiveattr attribute` end to
// end by ranks (docs/sizing.md), in each mode, with the communicator's
// members listed on every marker (as NCCL instrumentation without
// collectiveattr_torch writes them: R² bytes per collective, so run at
// the sizes up to 2 048 ranks and at 2 048 when the bound reaches it) or
// declared on its first marker. cpu-ns/record is the CPU time per input
// record.
func BenchmarkScaleAttributeCommand(b *testing.B) {
	dir := b.TempDir()
	for _, lists := range []struct {
		name  string
		lists eventgen.Lists
	}{{"every", eventgen.ListsEvery}, {"first", eventgen.ListsFirst}} {
		sizes := scale.Sizes()
		if lists.lists == eventgen.ListsEvery {
			sizes = everyMarkerSizes(sizes, scale.Max())
		}
		for _, ranks := range sizes {
			path := filepath.Join(dir, "run-"+lists.name+"-"+strconv.Itoa(ranks)+".jsonl")
			records, size := 0, 0
			for _, mode := range []string{"reference", "evidence"} {
				b.Run("lists="+lists.name+"/mode="+mode+"/ranks="+strconv.Itoa(ranks), func(b *testing.B) {
					if records == 0 {
						data := eventgen.JSONL(scaleSpec(ranks, lists.lists))
						if err := os.WriteFile(path, data, 0o600); err != nil {
							b.Fatal(err)
						}
						records, size = bytes.Count(data, []byte{'\n'}), len(data)
					}
					var stderr strings.Builder
					b.ReportAllocs()
					cpu := scale.StartCPU()
					for b.Loop() {
						if code := run([]string{"attribute", "--mode", mode, path}, nil, io.Discard, &stderr); code != 0 {
							b.Fatalf("exit %d: %s", code, stderr.String())
						}
					}
					cpu.Report(b)
					b.ReportMetric(float64(cpu.Elapsed().Nanoseconds())/float64(b.N*records), "cpu-ns/record")
					b.ReportMetric(float64(size)/float64(records), "B/record")
				})
			}
		}
	}
}

// everyMarkerListsMax is the largest job the every-marker benchmark runs:
// its input is R² list entries per collective.
const everyMarkerListsMax = 2048

// everyMarkerSizes are the sizes of the every-marker benchmark: those of
// sizes up to everyMarkerListsMax, and everyMarkerListsMax itself when the
// bound reaches it.
func everyMarkerSizes(sizes []int, bound int) []int {
	var out []int
	for _, n := range sizes {
		if n < everyMarkerListsMax {
			out = append(out, n)
		}
	}
	if bound >= everyMarkerListsMax {
		out = append(out, everyMarkerListsMax)
	}
	return out
}

// TestMembershipDeclaredOnceGivesTheSameResults: a job whose markers list
// the communicator's members only on the first marker gives the CLI's
// results of the same job listing them on every marker, in both modes.
func TestMembershipDeclaredOnceGivesTheSameResults(t *testing.T) {
	dir := t.TempDir()
	for _, mode := range []string{"reference", "evidence"} {
		var outs [2]string
		for i, lists := range []eventgen.Lists{eventgen.ListsEvery, eventgen.ListsFirst} {
			path := filepath.Join(dir, "run"+strconv.Itoa(i)+".jsonl")
			if err := os.WriteFile(path, eventgen.JSONL(scaleSpec(32, lists)), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr strings.Builder
			if code := run([]string{"attribute", "--mode", mode, path}, nil, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			outs[i] = stdout.String()
		}
		if !strings.Contains(outs[0], `"rank"`) {
			t.Fatalf("%s: no results:\n%s", mode, outs[0])
		}
		if outs[0] != outs[1] {
			t.Errorf("%s: results differ:\nevery marker: %s\nfirst marker: %s", mode, outs[0], outs[1])
		}
	}
}
