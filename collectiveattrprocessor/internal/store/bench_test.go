package store

import (
	"github.com/collectiveattr/collectiveattr/window"
	"runtime"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
)

// A big job: 1 024 ranks with a full 5-minute window at 10 Hz.
const (
	benchRanks   = 1024
	benchSamples = 3000
	benchStep    = int64(100 * time.Millisecond)
)

func benchConfig() Config {
	return Config{MaxJobs: 1000, MaxRanksPerJob: 16384, MaxEventsPerRank: 100_000, Window: 5 * time.Minute}
}

// fillBig buffers benchSamples samples (one run of 10 per second, as a
// metrics batch forms them) and a marker every 10 s on each of benchRanks
// ranks.
func fillBig(s *Store) {
	run := &ingest.SampleRun{JobID: "big", WorldSize: benchRanks, Samples: make([]ingest.SamplePoint, 10)}
	for sec := range int64(benchSamples / 10) {
		for r := range int64(benchRanks) {
			run.Rank = r
			for i := range run.Samples {
				ts := (sec*10 + int64(i)) * benchStep
				gap := int64(1<<20) + (ts/benchStep%7)<<16
				if (sec*10+int64(i))%100 == 50 {
					gap = 4 << 30
					s.AddRecord(&ingest.Record{Kind: ingest.KindMarker, JobID: "big", Rank: r, TimestampNs: ts,
						Marker: ingest.SpanRef{SpanID: [8]byte{byte(sec), byte(r)}}, MarkerTimesNs: []int64{ts}}, time.Time{})
				}
				run.Samples[i] = ingest.SamplePoint{TimestampNs: ts, DeviceUsed: 8<<30 + gap, AllocatorReserved: 8 << 30, DeviceTotal: 80 << 30, Has: ingest.HasDeviceTotal}
			}
			s.AddSampleRun(run, time.Time{})
		}
	}
}

// BenchmarkHeapPerSample reports the Go heap in use after a garbage
// collection per buffered sample of the big job, for the store alone and
// with the scratch space of one snapshot of it.
func BenchmarkHeapPerSample(b *testing.B) {
	for b.Loop() {
		var before, filled, snapped runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := New(benchConfig())
		fillBig(s)
		runtime.GC()
		runtime.ReadMemStats(&filled)
		var sc window.Scratch
		s.Job("big").Snapshot(&sc)
		runtime.GC()
		runtime.ReadMemStats(&snapped)
		const n = benchRanks * benchSamples
		b.ReportMetric(float64(filled.HeapInuse-before.HeapInuse)/n, "store-B/sample")
		b.ReportMetric(float64(snapped.HeapInuse-before.HeapInuse)/n, "with-scratch-B/sample")
		runtime.KeepAlive(s)
		runtime.KeepAlive(&sc)
	}
}

// BenchmarkAddSampleRun reports ns per sample of buffering runs of 10
// samples on ranks of the big job whose windows are full.
func BenchmarkAddSampleRun(b *testing.B) {
	s := New(benchConfig())
	fillBig(s)
	run := &ingest.SampleRun{JobID: "big", WorldSize: benchRanks, Samples: make([]ingest.SamplePoint, 10)}
	next := int64(benchSamples) * benchStep
	b.ReportAllocs()
	r := int64(0)
	for b.Loop() {
		run.Rank = r
		for i := range run.Samples {
			run.Samples[i] = ingest.SamplePoint{TimestampNs: next + int64(i)*benchStep, DeviceUsed: 9 << 30, AllocatorReserved: 8 << 30, DeviceTotal: 80 << 30, Has: ingest.HasDeviceTotal}
		}
		s.AddSampleRun(run, time.Time{})
		if r++; r == benchRanks {
			r, next = 0, next+10*benchStep
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(run.Samples)), "ns/sample")
}

// BenchmarkSnapshot reports one snapshot of the big job.
func BenchmarkSnapshot(b *testing.B) {
	s := New(benchConfig())
	fillBig(s)
	job := s.Job("big")
	var sc window.Scratch
	job.Snapshot(&sc) // grows the scratch
	b.ReportAllocs()
	for b.Loop() {
		job.Snapshot(&sc)
	}
}
