package evidence

import (
	"fmt"
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

// BenchmarkAttributeAccounting is the engine on a job of n ranks at 10 Hz
// with a world all_reduce every second and a spike at every tenth, without
// and with NCCL's accounting (two communicators per rank sharing one
// manager, reported every 100 ms): the cost of judging the accounting.
func BenchmarkAttributeAccounting(b *testing.B) {
	for _, n := range []int{16, 64, 256} {
		j := newSim(n, 100*ms, 60*sec)
		j.worldAllReduces()
		var spikes []overlay
		for k := int64(5); k < 60; k += 10 {
			spikes = append(spikes, j.collectiveSpike(rankList(0, n), k, gib))
		}
		without := j.input()
		j.accounting(rankList(0, n), "world", 300<<20, spikes)
		j.accounting(rankList(0, n), "tp", 300<<20, spikes)
		with := j.input()
		cfg := mediumConfig(b)
		for _, c := range []struct {
			name string
			in   *Input
		}{{"without", without}, {"with", with}} {
			b.Run(fmt.Sprintf("ranks=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					Attribute(c.in, cfg, nil)
				}
			})
		}
	}
}
