package evidence

import (
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/internal/eventgen"
)

// BenchmarkAttribute compares, on the 64 ranks × 3 000 samples run,
// evidence mode (building the columns from events, then attributing) with
// the reference mode on the same events (grouping, then attributing).
func BenchmarkAttribute(b *testing.B) {
	events := eventgen.Events(eventgen.Default(64))
	cfg, err := ResolveConfig("medium", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("evidence", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bl := NewBuilder()
			for i := range events {
				bl.Add(&events[i])
			}
			Attribute(bl.Input(), cfg, nil)
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			attribution.Attribute(events, cfg.Config, nil)
		}
	})
}

// BenchmarkAttributeInput is the engine alone on built columns.
func BenchmarkAttributeInput(b *testing.B) {
	events := eventgen.Events(eventgen.Default(64))
	bl := NewBuilder()
	for i := range events {
		bl.Add(&events[i])
	}
	in := bl.Input()
	cfg, err := ResolveConfig("medium", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		Attribute(in, cfg, nil)
	}
}
