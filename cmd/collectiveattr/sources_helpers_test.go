package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// sourceRun is a small job for the marker-source tests: ranks sampled
// every 100 ms for 60 s with a flat hidden-memory baseline, and spikes of
// 2 GiB lasting 300 ms on chosen ranks at chosen times. Each rank runs as
// host node0, pid 100+rank, device rank.
type sourceRun struct {
	ranks  int
	spikes []sourceSpike
}

type sourceSpike struct {
	atNs  int64 // offset from sourceT0Ns
	ranks []int
}

const (
	sourceT0Ns      = int64(1_767_225_600_000_000_000)
	sourceStepNs    = int64(100_000_000)
	sourceSamples   = 600
	sourceSpikeSize = int64(2 << 30)
)

func sourcePID(rank int) int64 { return int64(100 + rank) }

// samples returns the run's sample records in time order.
func (s sourceRun) samples() []telemetry.Event {
	var events []telemetry.Event
	for i := 0; i < sourceSamples; i++ {
		for r := 0; r < s.ranks; r++ {
			ts := sourceT0Ns + int64(i)*sourceStepNs + int64(r)*1_000_000
			reserved := int64(8<<30) + int64(r)<<24
			gap := int64(40<<20) + int64((i*7+r*13)%17)<<16
			for _, sp := range s.spikes {
				off := ts - sourceT0Ns
				if off >= sp.atNs && off < sp.atNs+300_000_000 && containsRank(sp.ranks, r) {
					gap += sourceSpikeSize
				}
			}
			events = append(events, sourceEvent(s, r, ts, "sample", reserved, reserved+gap))
		}
	}
	return events
}

func containsRank(ranks []int, r int) bool {
	for _, x := range ranks {
		if x == r {
			return true
		}
	}
	return false
}

func sourceEvent(s sourceRun, rank int, ts int64, eventType string, reserved, used int64) telemetry.Event {
	return telemetry.Event{
		SchemaVersion: 2, TimestampNs: ts, EventType: eventType, Collector: "stormlog.cuda_tracker",
		SamplingIntervalMs: 100, PID: sourcePID(rank), Host: "node0", JobID: "job-src",
		Rank: int64(rank), LocalRank: int64(rank), WorldSize: int64(s.ranks), DeviceID: int64(rank),
		AllocatorAllocatedBytes: telemetry.Int(reserved - 1<<29), AllocatorReservedBytes: telemetry.Int(reserved),
		AllocatorChangeBytes: telemetry.Int(0), DeviceUsedBytes: telemetry.Int(used),
		DeviceFreeBytes: telemetry.Int(int64(80<<30) - used), DeviceTotalBytes: telemetry.Int(80 << 30),
	}
}

// stormlogMarker is a stormlog marker record of rank carrying identity.
func (s sourceRun) stormlogMarker(rank int, atNs int64, comm, op string, seq int64) telemetry.Event {
	e := sourceEvent(s, rank, sourceT0Ns+atNs, "nccl:"+op, 8<<30, 8<<30)
	e.Context, e.HasContext = "NCCL "+op, true
	e.Metadata = map[string]any{
		"nccl.comm.id": comm, "nccl.op": op, "nccl.seq": json.Number(strconv.FormatInt(seq, 10)),
		"nccl.comm.nranks": json.Number(strconv.Itoa(s.ranks)), "nccl.message_bytes": json.Number("67108864"),
		"nccl.duration_ns": json.Number("150000000"),
	}
	return e
}

func writeEvents(t *testing.T, path string, events []telemetry.Event) {
	t.Helper()
	var out []byte
	for i := range events {
		out = telemetry.AppendJSON(out, &events[i])
		out = append(out, '\n')
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// evidenceResult is what the tests read of an evidence-mode result.
type evidenceResult struct {
	Rank           int64   `json:"rank"`
	StartNs        int64   `json:"interval_start_ns"`
	Classification string  `json:"classification"`
	Confidence     float64 `json:"confidence"`
	Collective     *struct {
		CommID       string `json:"comm_id"`
		Op           string `json:"op"`
		Seq          int64  `json:"seq"`
		CommRanks    int64  `json:"comm_ranks"`
		Synchronized int64  `json:"synchronized_comm_ranks"`
	} `json:"collective"`
}

// attributeRun runs `collectiveattr attribute` and decodes its results.
func attributeRun(t *testing.T, args ...string) ([]evidenceResult, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append([]string{"attribute"}, args...), nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var results []evidenceResult
	if err := json.Unmarshal(out.Bytes(), &results); err != nil {
		t.Fatalf("output %.300q: %v", out.String(), err)
	}
	return results, errb.String()
}

func tempPath(t *testing.T, name string) string { return filepath.Join(t.TempDir(), name) }
