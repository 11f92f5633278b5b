package phase_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// BenchmarkIndexBuilder builds the phase index of a simulated 16-rank job of
// 5 minutes (samples, collective events and ~19 000 phase boundaries) event
// by event, as `collectiveattr attribute --phases` does while streaming.
func BenchmarkIndexBuilder(b *testing.B) {
	cfg := jobsim.DefaultConfig()
	cfg.Ranks, cfg.Duration = 16, 5*time.Minute
	s, err := jobsim.NewScenario(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := s.Run(context.Background(), jobsim.Options{Epoch: time.Unix(1767225600, 0), Stormlog: &buf}); err != nil {
		b.Fatal(err)
	}
	events, err := telemetry.DecodeJSONL(buf.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var ib phase.IndexBuilder
		for i := range events {
			ib.Add(&events[i])
		}
		if phase.GroupCount(ib.Index(nil)) != cfg.Ranks {
			b.Fatal("one group per rank expected")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(events)), "ns/event")
}
