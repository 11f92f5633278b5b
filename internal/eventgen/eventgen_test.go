package eventgen

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

var writeJSONL = flag.String("write-jsonl", "", "write the default 64-rank run as JSON Lines to this path (for timing the CLI)")

// TestJSONLRoundTrip checks that generated JSON Lines decode to exactly the
// generated events, so benchmarks of the decoder and the engine see the same
// data.
func TestJSONLRoundTrip(t *testing.T) {
	spec := Spec{Ranks: 4, Samples: 200, SpikeRate: 0.05, Markers: true, Seed: 7}
	events := Events(spec)
	decoded, err := telemetry.DecodeJSONL(JSONL(spec))
	if err != nil {
		t.Fatal(err)
	}
	if len(decoded) != len(events) {
		t.Fatalf("%d events decoded, %d generated", len(decoded), len(events))
	}
	for i := range events {
		a := telemetry.AppendJSON(nil, &events[i])
		b := telemetry.AppendJSON(nil, &decoded[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("event %d differs:\n%s\n%s", i, a, b)
		}
	}
	markers := 0
	for i := range events {
		if events[i].EventType == "collective" {
			markers++
		}
	}
	if markers == 0 || markers%spec.Ranks != 0 {
		t.Fatalf("%d marker events, want a positive multiple of %d", markers, spec.Ranks)
	}
}

// TestWriteJSONL writes the benchmark file when -write-jsonl is given.
func TestWriteJSONL(t *testing.T) {
	if *writeJSONL == "" {
		t.Skip("no -write-jsonl path")
	}
	if err := os.WriteFile(*writeJSONL, JSONL(Default(64)), 0o644); err != nil {
		t.Fatal(err)
	}
}
