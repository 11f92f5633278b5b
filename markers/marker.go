package markers

import (
	"encoding/json"
	"strconv"

	"github.com/collectiveattr/collectiveattr/inspector"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Marker is one collective op of one rank as a source recorded it.
type Marker struct {
	// Rank is the global rank whose process recorded the op.
	Rank int64
	// StartNs and EndNs bound the op in ns since the Unix epoch.
	StartNs, EndNs int64
	// Op is the normalised operation (OpName); Name the source's own name.
	Op, Name string
	// CommID names the communicator (a PyTorch process-group name such as
	// "0"); "" when the source gives none.
	CommID string
	// Seq is the op's sequence number on CommID, equal on every member;
	// HasSeq is false when the source gives none (the marker is then bare).
	Seq    int64
	HasSeq bool
	// NRanks is the group's size and Ranks its global ranks (nil when not
	// given).
	NRanks int64
	Ranks  []int64
	// MessageBytes is the message size per rank (0 when unknown).
	MessageBytes int64
	// Approximate marks an interval known only to contain the op.
	Approximate bool
}

// Identity reports whether the marker names a collective instance.
func (m *Marker) Identity() bool { return m.CommID != "" && m.HasSeq }

// Events turns a marker into the stormlog marker events a mode reads.
type Events func(dst []telemetry.Event, m *Marker, owner *inspector.Owner, collector string) []telemetry.Event

// ReferenceEvents gives what the reference mode counts for an op, as for
// a marker span: a marker at its start and, when it lasts, one at its end.
func ReferenceEvents(dst []telemetry.Event, m *Marker, owner *inspector.Owner, collector string) []telemetry.Event {
	dst = append(dst, base(m, owner, collector, m.StartNs, "NCCL "+m.Op+" start"))
	if m.EndNs > m.StartNs {
		dst = append(dst, base(m, owner, collector, m.EndNs, "NCCL "+m.Op+" end"))
	}
	return dst
}

// EvidenceEvents gives one event at the op's start carrying its identity
// (docs/evidence-mode.md §2.1) when it has one: nccl.comm.id, nccl.seq,
// nccl.op, nccl.message_bytes, nccl.comm.nranks, nccl.comm.ranks,
// nccl.duration_ns and nccl.time_approximate. A marker without identity
// carries only its op, size and duration: a bare marker.
func EvidenceEvents(dst []telemetry.Event, m *Marker, owner *inspector.Owner, collector string) []telemetry.Event {
	e := base(m, owner, collector, m.StartNs, "NCCL "+m.Op)
	md := make(map[string]any, 9)
	md["nccl.op"] = m.Op
	if m.Identity() {
		md["nccl.comm.id"] = m.CommID
		md["nccl.seq"] = jsonInt(m.Seq)
		if m.NRanks > 0 {
			md["nccl.comm.nranks"] = jsonInt(m.NRanks)
		}
		if len(m.Ranks) > 0 {
			ranks := make([]any, len(m.Ranks))
			for i, r := range m.Ranks {
				ranks[i] = jsonInt(r)
			}
			md["nccl.comm.ranks"] = ranks
		}
	}
	if m.MessageBytes > 0 {
		md["nccl.message_bytes"] = jsonInt(m.MessageBytes)
	}
	md["nccl.duration_ns"] = jsonInt(max(m.EndNs-m.StartNs, 0))
	if m.Approximate {
		md["nccl.time_approximate"] = true
	}
	e.Metadata = md
	return append(dst, e)
}

func jsonInt(v int64) json.Number { return json.Number(strconv.FormatInt(v, 10)) }

// base is a marker event of the owner's rank: event_type nccl:<op> (a
// collective token for every op), zero counters (it is no sample), a
// schema v3 record when the owner has a session and v2 otherwise.
func base(m *Marker, o *inspector.Owner, collector string, ts int64, context string) telemetry.Event {
	version := 3
	if o.SessionID == "" {
		version = 2
	}
	zero := telemetry.Int(0)
	return telemetry.Event{
		SchemaVersion: version, SessionID: o.SessionID, TimestampNs: ts, EventType: "nccl:" + m.Op,
		Collector: collector, SamplingIntervalMs: o.SamplingIntervalMs, PID: -1, JobID: o.JobID,
		Rank: o.Rank, LocalRank: o.LocalRank, WorldSize: o.WorldSize, DeviceID: o.DeviceID,
		AllocatorAllocatedBytes: zero, AllocatorReservedBytes: zero, AllocatorChangeBytes: zero,
		DeviceUsedBytes: zero, Context: context, HasContext: true,
	}
}
