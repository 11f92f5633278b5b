package telemetry_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// BenchmarkStreamedMetadata reads the metadata of a simulated job's
// streamed records as the CLI's consumers do: every top-level member
// (evidence's record readers), one key (the report's labels) and a token search
// over every string (attribution's markers). ns/op is per record with
// metadata.
func BenchmarkStreamedMetadata(b *testing.B) {
	var events []telemetry.Event
	err := telemetry.Stream(bytes.NewReader(simulatedJSONL()), func(chunk []telemetry.Event) error {
		for _, e := range chunk {
			if e.HasMetadata() {
				events = append(events, e)
			}
		}
		return nil
	})
	if err != nil || len(events) == 0 {
		b.Fatal(len(events), err)
	}
	token := func(s string) bool { return strings.Contains(s, "all_gather") }
	for _, tc := range []struct {
		name string
		read func(e *telemetry.Event) bool
	}{
		{"members", func(e *telemetry.Event) bool {
			n := 0
			for k, v := range e.MetadataMembers() {
				if _, ok := v.AsString(); ok || k == "" {
					n++
				}
			}
			return n > 0
		}},
		{"lookup", func(e *telemetry.Event) bool {
			_, ok := e.MetadataLookup("nccl.op")
			return ok
		}},
		{"strings", func(e *telemetry.Event) bool { return e.AnyMetadataString(token) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				tc.read(&events[i%len(events)])
				i++
			}
		})
	}
}
