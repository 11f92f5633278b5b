package store

import (
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
)

// fillCheckpointJob buffers a 64-rank job with a full 5-minute window at
// 10 Hz (3 000 samples a rank) and a marker span every 10 s, as the
// checkpoint benchmarks' job.
func fillCheckpointJob(s *Store) *Job {
	const ranks = 64
	run := &ingest.SampleRun{JobID: "ckpt", WorldSize: ranks, Samples: make([]ingest.SamplePoint, 10)}
	for sec := range int64(benchSamples / 10) {
		for r := range int64(ranks) {
			run.Rank = r
			for i := range run.Samples {
				ts := (sec*10 + int64(i)) * benchStep
				gap := int64(1<<20) + (ts/benchStep%7)<<16
				if (sec*10+int64(i))%100 == 50 {
					gap = 4 << 30
					s.AddRecord(&ingest.Record{Kind: ingest.KindMarker, JobID: "ckpt", Rank: r, TimestampNs: ts,
						Marker: ingest.SpanRef{SpanID: [8]byte{byte(sec), byte(r)}}, MarkerTimesNs: []int64{ts}}, time.Time{})
				}
				run.Samples[i] = ingest.SamplePoint{TimestampNs: ts, DeviceUsed: 8<<30 + gap, AllocatorReserved: 8 << 30, DeviceTotal: 80 << 30, Has: ingest.HasDeviceTotal}
			}
			s.AddSampleRun(run, time.Time{})
		}
	}
	return s.Job("ckpt")
}

// BenchmarkCheckpoint reports the encoding of the 64-rank job's checkpoint
// into a reused buffer, and its size.
func BenchmarkCheckpoint(b *testing.B) {
	s := New(benchConfig())
	job := fillCheckpointJob(s)
	buf := s.AppendCheckpoint(nil, job)
	b.ReportMetric(float64(len(buf)), "bytes")
	b.ReportAllocs()
	for b.Loop() {
		buf = s.AppendCheckpoint(buf[:0], job)
	}
}

// BenchmarkRestore reports the restore of the 64-rank job's checkpoint.
func BenchmarkRestore(b *testing.B) {
	src := New(benchConfig())
	data := src.AppendCheckpoint(nil, fillCheckpointJob(src))
	b.ReportAllocs()
	for b.Loop() {
		s := New(benchConfig())
		if _, err := s.Restore(data, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
}
