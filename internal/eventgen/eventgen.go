// Package eventgen generates deterministic synthetic stormlog telemetry for
// tests and benchmarks: N ranks sampled every 100 ms with a flat hidden-memory
// baseline, and a fraction of steps where every rank's hidden memory jumps
// together (an NCCL collective) with a marker event right after the spike.
// Large inputs are generated rather than committed.
package eventgen

import (
	"encoding/json"
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
	// Identity names each marker's collective as NCCL instrumentation
	// does (evidence-mode §2.1): communicator "world", the spike's step as
	// sequence number, all_reduce, nccl.comm.nranks, and the members'
	// global ranks as Lists says.
	Identity bool
	Lists    Lists
	Seed     uint64
}

// Lists is where markers with an Identity list the communicator's members
// (nccl.comm.ranks).
type Lists int

const (
	ListsNone  Lists = iota // no marker lists them (nccl.comm.nranks only)
	ListsEvery              // every marker, as today's producers write them
	ListsFirst              // each rank's first marker of the communicator only
)

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
	var members []any
	if s.Identity && s.Lists != ListsNone {
		members = make([]any, s.Ranks)
		for r := range members {
			members[r] = json.Number(strconv.Itoa(r))
		}
	}
	markersSoFar := 0
	reserved := make([]int64, s.Ranks)
	for r := range reserved {
		// Up to 1 024 distinct levels: past that the level would outgrow
		// the 80 GiB device.
		reserved[r] = 8_000_000_000 + int64(r%1024)*16_777_216
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
			md := markerMeta
			if s.Identity {
				md = identityMetadata(s, i, members, false)
				if first := markersSoFar == 0; first && s.Lists == ListsFirst {
					md = identityMetadata(s, i, members, true)
				}
			}
			markersSoFar++
			for r := 0; r < s.Ranks; r++ {
				ts := baseNs + int64(i)*stepNs + int64(r)*rankOffsetNs + markerLagNs
				e := event(s, r, ts, "collective", reserved[r], reserved[r], md)
				e.Context, e.HasContext = "NCCL all_reduce phase", true
				events = append(events, e)
			}
		}
	}
	return events
}

// identityMetadata is the metadata of the markers of the collective at
// step; members are listed when Lists is ListsEvery, or when first.
func identityMetadata(s Spec, step int, members []any, first bool) map[string]any {
	md := map[string]any{
		"phase": "communication.collective", "nccl.comm.id": "world", "nccl.seq": json.Number(strconv.Itoa(step)),
		"nccl.op": "all_reduce", "nccl.comm.nranks": json.Number(strconv.Itoa(s.Ranks)), "nccl.duration_ns": json.Number("20000000"),
	}
	if s.Lists == ListsEvery || first {
		md["nccl.comm.ranks"] = members
	}
	return md
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
