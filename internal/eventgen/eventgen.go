// Package eventgen generates deterministic synthetic stormlog telemetry for
// tests and benchmarks: N ranks sampled every 100 ms with a flat hidden-memory
// baseline, and a fraction of steps where every rank's hidden memory jumps
// together (an NCCL collective) with a marker event right after the spike.
// Large inputs are generated rather than committed.
package eventgen

import (
	"math/rand/v2"
	"strconv"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Spec describes a run.
type Spec struct {
	Ranks   int
	Samples int // per rank
	// SpikeRate is the fraction of steps with a synchronized spike.
	SpikeRate float64
	// Markers adds a "collective" marker event per rank 10 ms after each
	// spike.
	Markers bool
	Seed    uint64
}

// Default is the benchmark shape per rank count: 3 000 samples per
// rank, 2 % spikes with markers.
func Default(ranks int) Spec {
	return Spec{Ranks: ranks, Samples: 3000, SpikeRate: 0.02, Markers: true, Seed: 1}
}

const (
	baseNs       = int64(1_767_225_600_000_000_000)
	stepNs       = int64(100_000_000)
	rankOffsetNs = int64(50_000) // ranks sample 50 µs apart
	markerLagNs  = int64(10_000_000)
	deviceTotal  = int64(80 << 30)
	baseGap      = int64(40_000_000)
	spikeGap     = int64(1_600_000_000)
)

// Events returns the run's events in time order (rank-interleaved, as a
// collector merging per-rank streams would see them).
func Events(s Spec) []telemetry.Event {
	rng := rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15))
	spikes := make([]bool, s.Samples)
	nSpikes := 0
	for i := range spikes {
		spikes[i] = rng.Float64() < s.SpikeRate
		if spikes[i] {
			nSpikes++
		}
	}
	n := s.Ranks * s.Samples
	if s.Markers {
		n += s.Ranks * nSpikes
	}
	events := make([]telemetry.Event, 0, n)
	meta := map[string]any{"backend": "cuda", "sampling_source": "nvml"}
	markerMeta := map[string]any{"phase": "communication.collective"}
	reserved := make([]int64, s.Ranks)
	for r := range reserved {
		reserved[r] = 8_000_000_000 + int64(r)*16_777_216
	}
	for i := 0; i < s.Samples; i++ {
		for r := 0; r < s.Ranks; r++ {
			ts := baseNs + int64(i)*stepNs + int64(r)*rankOffsetNs
			gap := baseGap + rng.Int64N(4_000_000)
			if spikes[i] {
				gap = spikeGap + rng.Int64N(50_000_000)
			}
			used := reserved[r] + gap
			events = append(events, event(s, r, ts, "sample", reserved[r], used, meta))
		}
		if s.Markers && spikes[i] {
			for r := 0; r < s.Ranks; r++ {
				ts := baseNs + int64(i)*stepNs + int64(r)*rankOffsetNs + markerLagNs
				e := event(s, r, ts, "collective", reserved[r], reserved[r], markerMeta)
				e.Context, e.HasContext = "NCCL all_reduce phase", true
				events = append(events, e)
			}
		}
	}
	return events
}

func event(s Spec, rank int, ts int64, eventType string, reserved, used int64, meta map[string]any) telemetry.Event {
	return telemetry.Event{
		SchemaVersion:           2,
		TimestampNs:             ts,
		EventType:               eventType,
		Collector:               "stormlog.cuda_tracker",
		SamplingIntervalMs:      100,
		PID:                     int64(10_000 + rank),
		Host:                    "node-" + strconv.Itoa(rank/8),
		JobID:                   "job-bench",
		Rank:                    int64(rank),
		LocalRank:               int64(rank % 8),
		WorldSize:               int64(s.Ranks),
		DeviceID:                int64(rank % 8),
		AllocatorAllocatedBytes: telemetry.Int(reserved - 536_870_912),
		AllocatorReservedBytes:  telemetry.Int(reserved),
		AllocatorChangeBytes:    telemetry.Int(0),
		DeviceUsedBytes:         telemetry.Int(used),
		DeviceFreeBytes:         telemetry.Int(deviceTotal - used),
		DeviceTotalBytes:        telemetry.Int(deviceTotal),
		Metadata:                meta,
	}
}

// JSONL returns the run as TelemetryEvent JSON Lines.
func JSONL(s Spec) []byte {
	events := Events(s)
	out := make([]byte, 0, len(events)*640)
	for i := range events {
		out = telemetry.AppendJSON(out, &events[i])
		out = append(out, '\n')
	}
	return out
}
