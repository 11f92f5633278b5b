package attribution

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	"github.com/collectiveattr/collectiveattr/internal/eventgen"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// streamedInput feeds the decoded stream of data to an InputBuilder, in the
// stream's chunks, collecting garbage every few chunks so that metadata maps
// of dropped chunks are freed and their addresses can be reused.
func streamedInput(t *testing.T, data []byte) (Input, int) {
	t.Helper()
	var b InputBuilder
	chunks := 0
	err := telemetry.Stream(bytes.NewReader(data), func(chunk []telemetry.Event) error {
		b.AddEvents(chunk)
		if chunks++; chunks%3 == 0 {
			runtime.GC()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.Input(), b.Events()
}

// TestInputBuilderMatchesBuildInputOracle: the builder fed a decoded stream
// chunk by chunk gives what BuildInput as of 8c9c5f4 gives on all events at
// once, on generated runs and on records with per-record metadata where
// only some hold a marker token (the case address reuse would break), some
// only in a value a repeated key replaces, some only once an escape is
// decoded.
func TestInputBuilderMatchesBuildInputOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 19))
	var distinct bytes.Buffer
	for i := range 40000 {
		meta := fmt.Sprintf(`{"seq":%d,"note":"plain"}`, i)
		switch rng.IntN(6) {
		case 0, 1:
			meta = fmt.Sprintf(`{"seq":%d,"op":"nccl:all_reduce"}`, i)
		case 2: // the token's value is replaced by the key's second value
			meta = fmt.Sprintf(`{"op":"nccl:all_reduce","seq":%d,"op":"plain"}`, i)
		case 3:
			meta = fmt.Sprintf(`{"op":"plain","k":{"x":["all\u005freduce"]},"seq":%d}`, i)
		}
		eventType := "sample"
		if rng.IntN(4) == 0 {
			eventType = "alloc"
		}
		fmt.Fprintf(&distinct, `{"schema_version":3,"session_id":"s%d","timestamp_ns":%d,"event_type":%q,"collector":"c","sampling_interval_ms":0,"pid":1,"host":"h","rank":%d,"world_size":8,"device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":%d,"allocator_active_bytes":null,"allocator_inactive_bytes":null,"allocator_change_bytes":0,"device_used_bytes":%d,"device_free_bytes":null,"device_total_bytes":%s,"context":null,"metadata":%s}`+"\n",
			i%8, 1_000_000+int64(rng.IntN(5000))*1000, eventType, i%8, 1000, 1000+rng.IntN(3000), []string{"null", "8000"}[rng.IntN(2)], meta)
	}
	inputs := map[string][]byte{
		"eventgen 16 ranks":     eventgen.JSONL(eventgen.Default(16)),
		"eventgen sparse ranks": eventgen.JSONL(eventgen.Spec{Ranks: 3, Samples: 500, SpikeRate: 0.1, Markers: true, Seed: 9}),
		"distinct metadata":     distinct.Bytes(),
	}
	for name, data := range inputs {
		events, err := telemetry.DecodeJSONL(data)
		if err != nil {
			t.Fatal(err)
		}
		want := oldBuildInput(events)
		got, n := streamedInput(t, data)
		if n != len(events) {
			t.Fatalf("%s: %d events added, want %d", name, n, len(events))
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: streamed input differs from BuildInput's", name)
		}
		if got := BuildInput(events); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: BuildInput differs from the oracle", name)
		}
	}
}

// TestInputBuilderMatchesOnFuzzRuns compares BuildInput with the oracle on
// the fuzz target's runs (ties, unsorted times, negative ranks, markers
// without samples).
func TestInputBuilderMatchesOnFuzzRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 500 {
		data := make([]byte, 6*rng.IntN(80))
		for i := range data {
			data[i] = byte(rng.UintN(256))
		}
		events := fuzzEvents(data)
		if !reflect.DeepEqual(BuildInput(events), oldBuildInput(events)) {
			t.Fatalf("round %d: BuildInput differs from the oracle", round)
		}
		var b InputBuilder
		for i := range events {
			b.Add(&events[i])
		}
		if !reflect.DeepEqual(b.Input(), oldBuildInput(events)) {
			t.Fatalf("round %d: InputBuilder differs from the oracle", round)
		}
	}
}
