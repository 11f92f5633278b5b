package window_test

import (
	"strconv"
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

// BenchmarkStreamAdd is the per-record cost of buffering a file's records
// in a stream, by ranks: samples and world all_reduce markers listing
// their members, interleaved across the ranks in time order. The cost per
// record should not grow with the ranks.
func BenchmarkStreamAdd(b *testing.B) {
	for _, ranks := range []int{64, 512, 2048} {
		events := eventgen.Events(eventgen.Spec{Ranks: ranks, Samples: 100, SpikeRate: 0.05, Markers: true, Identity: true, Lists: eventgen.ListsEvery, Seed: 1})
		for _, mode := range []struct {
			name string
			mode window.Mode
		}{{"reference", window.ReferenceMode}, {"evidence", window.EvidenceMode}} {
			b.Run("mode="+mode.name+"/ranks="+strconv.Itoa(ranks), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					window.NewStream(mode.mode, false).AddEvents(events)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/record")
			})
		}
	}
}
