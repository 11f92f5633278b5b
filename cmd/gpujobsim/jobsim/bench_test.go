package jobsim

import (
	"io"
	"testing"
	"time"
)

// The simulator must outpace the collector in -fast mode: one second of a 16-rank job is
// 1 120 data points.
func BenchmarkMetricsOneSecond(b *testing.B) {
	s, err := NewScenario(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Metrics(5*time.Second, 6*time.Second, testEpoch, DeviceFromOTLP)
	}
}

func BenchmarkTracesOneStep(b *testing.B) {
	s, err := NewScenario(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Traces(4*time.Second, 6*time.Second, testEpoch)
	}
}

func BenchmarkStormlogOneSecond(b *testing.B) {
	s, err := NewScenario(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.WriteStormlog(io.Discard, 5*time.Second, 6*time.Second, testEpoch); err != nil {
			b.Fatal(err)
		}
	}
}
