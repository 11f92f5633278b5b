package collectiveattrprocessor

import (
	"context"
	"encoding/json"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// BenchmarkEvaluationTickStreamingByMode is BenchmarkEvaluationTickByMode
// as a running job makes it: before each round every rank receives the
// next second of its samples (10 at 10 Hz, with the marker and spike every
// 10 s) and max_events_per_rank evicts as many of its oldest events, so
// work a mode keeps between rounds is measured with the data changing as
// it does in real use.
func BenchmarkEvaluationTickStreamingByMode(b *testing.B) {
	for _, mode := range []AttributionMode{ModeReference, ModeEvidence} {
		b.Run(string(mode), func(b *testing.B) {
			const ranks, samples = 256, 3000
			cfg := createDefaultConfig().(*Config)
			cfg.Mode = mode
			// 3 000 samples and their 30 markers: each new event evicts
			// the oldest.
			cfg.Limits.MaxEventsPerRank = samples + samples/100
			p := newCoreLogs(b, cfg)
			defer func() { _ = p.Shutdown(context.Background()) }()
			c := p.core
			step := int64(time.Second) / benchHz
			start := time.Now().Add(-30*time.Minute).UnixNano() / step * step
			addTickSamples(c, ranks, start, step, 0, samples)
			evaluationRound(b, c, "big") // the first round grows the evaluation scratch
			next := int64(samples)
			var roundCPU time.Duration
			b.ReportAllocs()
			for b.Loop() {
				addTickSamples(c, ranks, start, step, next, next+benchHz)
				next += benchHz
				cpu := roundProcessCPU()
				evaluationRound(b, c, "big")
				roundCPU += roundProcessCPU() - cpu
			}
			// The machine the benchmarks run on is shared: the rounds' CPU
			// time is the cost that does not depend on its load.
			b.ReportMetric(float64(roundCPU.Nanoseconds())/1e6/float64(b.N), "round-cpu-ms/op")
		})
	}
}

// addTickSamples buffers samples [from, to) of every rank of job "big"
// (sample i at start+i*step), with an all_reduce marker on the world
// communicator and a spike at it every 100 samples.
func addTickSamples(c *core, ranks, start, step, from, to int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for r := range ranks {
		run := ingest.SampleRun{JobID: "big", Rank: r, WorldSize: ranks, LocalRank: r, DeviceID: -1}
		for i := from; i < to; i++ {
			ts := start + i*step
			gap := baselineGap(i)
			if i%100 == 50 {
				gap = spikeGap
				rec := ingest.Record{
					Kind: ingest.KindStormlog, JobID: "big", Rank: r, WorldSize: ranks, TimestampNs: ts, Stormlog: ingest.StormlogMarker,
					Event: telemetry.Event{SchemaVersion: 3, TimestampNs: ts, EventType: "nccl:all_reduce", Rank: r, WorldSize: telemetry.Int(ranks).Value,
						Metadata: map[string]any{
							evidence.KeyCommID: "world", evidence.KeySeq: json.Number(strconv.FormatInt(i/100, 10)), evidence.KeyOp: "all_reduce",
							evidence.KeyDurationNs: json.Number("20000000"), evidence.KeyCommNRanks: json.Number(strconv.Itoa(int(ranks))),
						}},
				}
				c.store.AddRecord(&rec, now)
			}
			run.Samples = append(run.Samples, ingest.SamplePoint{
				TimestampNs: ts, AllocatorReserved: baseReserved, AllocatorAllocated: baseReserved,
				DeviceUsed: baseReserved + gap, DeviceTotal: deviceTotal, Has: ingest.HasDeviceTotal,
			})
		}
		c.store.AddSampleRun(&run, now)
	}
	c.publishSizes()
}

// roundProcessCPU is the CPU time this process has used (all threads, the
// garbage collector's included).
func roundProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
