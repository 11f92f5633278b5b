package collectiveattrprocessor

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// BenchmarkEvaluationTickByMode measures one evaluation round, in each
// mode, of a job of 256 ranks with 3 000 buffered samples each (5 minutes
// at 10 Hz) and, every 10 s, a world all_reduce marker with its identity
// (communicator, seq, 20 ms) and a spike at it on every rank.
func BenchmarkEvaluationTickByMode(b *testing.B) {
	for _, mode := range []AttributionMode{ModeReference, ModeEvidence} {
		b.Run(string(mode), func(b *testing.B) {
			c := evaluationJob(b, mode, 256, 3000)
			evaluationRound(b, c, "big") // the first round grows the evaluation scratch
			b.ReportAllocs()
			for b.Loop() {
				evaluationRound(b, c, "big")
			}
		})
	}
}

// evaluationJob returns a core in mode buffering job "big" of ranks ranks
// with samples samples each at 10 Hz, ending now, and every 10 s a world
// all_reduce marker with its identity (communicator, seq, 20 ms) and a
// spike at it on every rank. The core is shut down with b.
func evaluationJob(b testing.TB, mode AttributionMode, ranks, samples int64) *core {
	cfg := createDefaultConfig().(*Config)
	cfg.Mode = mode
	p := newCoreLogs(b, cfg)
	b.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	c := p.core
	step := int64(time.Second) / benchHz
	start := (time.Now().UnixNano() - samples*step) / step * step
	addEvaluationSamples(c, ranks, start, 0, samples)
	return c
}

// addEvaluationSamples buffers samples from to to (numbered from start at
// 10 Hz) of evaluationJob's job, with its markers and spikes.
func addEvaluationSamples(c *core, ranks, start, from, to int64) {
	step := int64(time.Second) / benchHz
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
							evidence.KeyDurationNs: json.Number("20000000"), evidence.KeyCommNRanks: json.Number(strconv.FormatInt(ranks, 10)),
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
