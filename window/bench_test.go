package window_test

import (
	"testing"

	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/internal/eventgen"
	"github.com/collectiveattr/collectiveattr/window"
)

// BenchmarkAttributeStream compares, on the 64 ranks × 3 000 samples run,
// the two modes' whole way from records in memory: streamed into a
// window, snapshotted, attributed.
func BenchmarkAttributeStream(b *testing.B) {
	events := eventgen.Events(eventgen.Default(64))
	cfg, err := evidence.ResolveConfig("medium", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("evidence", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			window.AttributeEvidence(events, cfg, nil)
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			window.AttributeReference(events, cfg.Config, nil)
		}
	})
}

// BenchmarkEvidenceAttributeInput is evidence mode's engine alone on the
// input a window's snapshot hands it (the same run).
func BenchmarkEvidenceAttributeInput(b *testing.B) {
	in := streamEvidence(eventgen.Events(eventgen.Default(64)))
	cfg, err := evidence.ResolveConfig("medium", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		evidence.Attribute(in, cfg, nil)
	}
}
