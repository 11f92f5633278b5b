package telemetry_test

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// simulatedJSONL is what `gpujobsim -fast -stormlog` writes for a 16-rank
// job of 5 minutes at 10 Hz (~62 MB): samples, NCCL collective events with
// per-call metadata and phase boundaries, so about a third of the records
// carry metadata of their own.
var simulatedJSONL = sync.OnceValue(func() []byte {
	cfg := jobsim.DefaultConfig()
	cfg.Ranks, cfg.Duration = 16, 5*time.Minute
	s, err := jobsim.NewScenario(cfg)
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	opts := jobsim.Options{Epoch: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Stormlog: &buf}
	if _, err := s.Run(context.Background(), opts); err != nil {
		panic(err)
	}
	return buf.Bytes()
})

// BenchmarkStream streams the simulated job through a consumer that only
// counts, as JSON Lines and as the one-line {"events": [...]} document
// json.dump writes; MB/s are of input text. cpu-ms/op is the CPU time of
// all threads (GOMAXPROCS decoders): divide MB/s·ns/op by it for MB/s per
// core.
func BenchmarkStream(b *testing.B) {
	jsonl := simulatedJSONL()
	doc := oneLineDocument(b, jsonl)
	for _, tc := range []struct {
		name string
		data []byte
	}{{"jsonl", jsonl}, {"events_document", doc}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			b.ReportAllocs()
			runtime.GC()
			start := processCPU()
			for b.Loop() {
				n := 0
				err := telemetry.Stream(bytes.NewReader(tc.data), func(chunk []telemetry.Event) error {
					n += len(chunk)
					return nil
				})
				if err != nil || n == 0 {
					b.Fatal(n, err)
				}
			}
			b.ReportMetric(float64((processCPU()-start).Nanoseconds())/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}

// oneLineDocument wraps JSON Lines into {"events": [...]} on one line.
func oneLineDocument(b *testing.B, jsonl []byte) []byte {
	b.Helper()
	lines := bytes.Split(bytes.TrimSuffix(jsonl, []byte("\n")), []byte("\n"))
	doc := append([]byte(`{"events": [`), bytes.Join(lines, []byte(", "))...)
	return append(doc, "]}"...)
}
