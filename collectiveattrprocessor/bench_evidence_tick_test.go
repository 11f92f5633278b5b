package collectiveattrprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// BenchmarkEvaluationTickStreamingByMode is BenchmarkEvaluationTickByMode
// as a running job makes it, by ranks, window (samples buffered per rank)
// and evaluation interval: before each round every rank receives the next
// interval of its samples (at 10 Hz, with the marker and spike every 10 s)
// and max_events_per_rank evicts as many of its oldest events, so work a
// mode keeps between rounds is measured with the data changing as it does
// in real use.
func BenchmarkEvaluationTickStreamingByMode(b *testing.B) {
	for _, mode := range []AttributionMode{ModeReference, ModeEvidence} {
		for _, ranks := range []int64{256, 1024} {
			for _, samples := range []int64{1500, 3000} {
				for _, interval := range []int64{1, 10} {
					name := fmt.Sprintf("%s/ranks=%d/window=%d/interval=%ds", mode, ranks, samples, interval)
					b.Run(name, func(b *testing.B) {
						benchEvaluationTickStreaming(b, mode, ranks, samples, interval*benchHz)
					})
				}
			}
		}
	}
}

func benchEvaluationTickStreaming(b *testing.B, mode AttributionMode, ranks, samples, perRound int64) {
	cfg := createDefaultConfig().(*Config)
	cfg.Mode = mode
	// samples samples and their markers (one every 100 samples): each new
	// event evicts the oldest.
	cfg.Limits.MaxEventsPerRank = int(samples + samples/100)
	p := newCoreLogs(b, cfg)
	defer func() { _ = p.Shutdown(context.Background()) }()
	c := p.core
	step := int64(time.Second) / benchHz
	start := time.Now().Add(-30*time.Minute).UnixNano() / step * step
	addTickSamples(c, ranks, start, step, 0, samples)
	evaluationRound(b, c, "big") // the first round grows the evaluation scratch
	next := samples
	var roundCPU time.Duration
	b.ReportAllocs()
	for b.Loop() {
		addTickSamples(c, ranks, start, step, next, next+perRound)
		next += perRound
		cpu := roundProcessCPU()
		evaluationRound(b, c, "big")
		roundCPU += roundProcessCPU() - cpu
	}
	// The machine the benchmarks run on is shared: the rounds' CPU time is
	// the cost that does not depend on its load.
	b.ReportMetric(float64(roundCPU.Nanoseconds())/1e6/float64(b.N), "round-cpu-ms/op")
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
