package inspector

import (
	"encoding/json"
	"strconv"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Collector is the collector field of the events converted from records.
const Collector = "nccl_inspector"

// Joined is an op with the rank whose process wrote it and, when the
// communicator's members are known, their global ranks.
type Joined struct {
	Op    *Op
	Owner Owner
	// CommRanks are the global ranks of the communicator in comm-rank
	// order, nil when not every member's record has been joined.
	CommRanks []int64
}

// PeerRank is the global rank of a P2P op's peer, when CommRanks is known.
func (j *Joined) PeerRank() (int64, bool) {
	if !j.Op.HasPeer || j.CommRanks == nil || j.Op.Peer >= int64(len(j.CommRanks)) {
		return 0, false
	}
	return j.CommRanks[j.Op.Peer], true
}

// MarkerFunc appends the marker events of one joined op to dst: how a mode
// sees an Inspector record.
type MarkerFunc func(dst []telemetry.Event, j *Joined) []telemetry.Event

// ReferenceMarkers gives what the reference mode counts for an op, as for a
// marker span (processor-contract §3.2): a marker at the op's start and,
// when the op lasts, one at its end. A zero-duration op gives a single
// marker, so a stormlog marker written out as an Inspector record and read
// back counts once, at the same time (to the µs the record holds). In the
// default layout the interval is the dump-time estimate, used as it is.
func ReferenceMarkers(dst []telemetry.Event, j *Joined) []telemetry.Event {
	op := j.Op
	texts := textsOf(op.Name)
	e := baseEvent(j, op.StartNs, texts.start)
	dst = append(dst, e)
	if op.EndNs > op.StartNs {
		e.TimestampNs, e.Context = op.EndNs, texts.end // the start's but for these
		dst = append(dst, e)
	}
	return dst
}

// markerTexts are the contexts of an op's markers.
type markerTexts struct{ start, end, evidence string }

// knownTexts holds the texts of the names the plugin prints, so that the
// markers of the common ops allocate no strings.
var knownTexts = func() map[string]markerTexts {
	m := make(map[string]markerTexts, len(opNames))
	for name := range opNames {
		m[name] = newMarkerTexts(name)
	}
	return m
}()

func newMarkerTexts(name string) markerTexts {
	return markerTexts{start: "NCCL " + name + " start", end: "NCCL " + name + " end", evidence: "NCCL " + name}
}

func textsOf(name string) markerTexts {
	if t, ok := knownTexts[name]; ok {
		return t
	}
	return newMarkerTexts(name)
}

// knownEventTypes are the event types of the normalised op names.
var knownEventTypes = func() map[string]string {
	m := make(map[string]string, len(opNames))
	for _, op := range opNames {
		m[op] = "nccl:" + op
	}
	return m
}()

func eventTypeOf(op string) string {
	if t, ok := knownEventTypes[op]; ok {
		return t
	}
	return "nccl:" + op
}

// EvidenceMarker gives one event at the op's start carrying its collective
// identity (evidence-mode §2.1) in metadata: nccl.comm.id, nccl.comm.name,
// nccl.op, nccl.seq, nccl.message_bytes, nccl.comm.nranks,
// nccl.comm.ranks and nccl.peer (global ranks, once the communicator's
// members are joined; until then a P2P op carries nccl.peer_comm_rank, the
// peer's rank within the communicator), nccl.duration_ns, and
// nccl.time_approximate: true when the interval is the default layout's
// dump-time estimate.
//
// A collective is (header.id, coll_sn) with the communicator's size. A P2P
// op numbered by its Parser (Op.PairSeq) is one transfer of a pair: its
// identity is (Op.PairCommID, PairSeq), 2 members, and as nccl.comm.ranks
// the sender's and the receiver's global ranks once known, so the send and
// its matching recv name one collective instance. A P2P op without a
// PairSeq carries no sequence number.
//
// An "Invalid" op (FlagInvalidOp) is a bare marker: its time, op, size and
// duration, no communicator or sequence number. The plugin prints every
// NCCL function it has no name for (all-to-all, gather, scatter) as
// "Invalid", and NCCL numbers each function on its own counter, so
// (communicator, "invalid", coll_sn) would name several ops as one.
func EvidenceMarker(dst []telemetry.Event, j *Joined) []telemetry.Event {
	op := j.Op
	e := baseEvent(j, op.StartNs, textsOf(op.Name).evidence)
	if op.Flags&FlagInvalidOp != 0 {
		e.Metadata = bareMetadata(op)
		return append(dst, e)
	}
	md := make(map[string]any, 10)
	pair := op.Kind == P2P && op.HasPairSeq
	if pair {
		md["nccl.comm.id"] = op.PairCommID()
	} else {
		md["nccl.comm.id"] = op.CommID
	}
	if op.CommName != "" {
		md["nccl.comm.name"] = op.CommName
	}
	md["nccl.op"] = op.Op
	switch {
	case pair:
		md["nccl.seq"] = jsonInt(op.PairSeq)
	case op.HasSeq:
		md["nccl.seq"] = jsonInt(op.Seq)
	}
	md["nccl.message_bytes"] = jsonInt(op.MessageBytes)
	switch {
	case pair:
		md["nccl.comm.nranks"] = jsonInt(2)
		from, to := op.PairRanks()
		if j.CommRanks != nil && from < int64(len(j.CommRanks)) && to < int64(len(j.CommRanks)) {
			md["nccl.comm.ranks"] = []any{jsonInt(j.CommRanks[from]), jsonInt(j.CommRanks[to])}
		}
	default:
		md["nccl.comm.nranks"] = jsonInt(op.NRanks)
		if j.CommRanks != nil {
			ranks := make([]any, len(j.CommRanks))
			for i, g := range j.CommRanks {
				ranks[i] = jsonInt(g)
			}
			md["nccl.comm.ranks"] = ranks
		}
	}
	if op.HasPeer {
		if g, ok := j.PeerRank(); ok {
			md["nccl.peer"] = jsonInt(g)
		} else {
			md["nccl.peer_comm_rank"] = jsonInt(op.Peer)
		}
	}
	md["nccl.duration_ns"] = jsonInt(op.DurationNs())
	if op.Approximate() {
		md["nccl.time_approximate"] = true
	}
	e.Metadata = md
	return append(dst, e)
}

// bareMetadata is the metadata of a marker without collective identity.
func bareMetadata(op *Op) map[string]any {
	md := map[string]any{
		"nccl.op":            op.Op,
		"nccl.message_bytes": jsonInt(op.MessageBytes),
		"nccl.duration_ns":   jsonInt(op.DurationNs()),
	}
	if op.Approximate() {
		md["nccl.time_approximate"] = true
	}
	return md
}

func jsonInt(v int64) json.Number { return json.Number(strconv.FormatInt(v, 10)) }

// baseEvent is a marker event of the joined rank: event_type nccl:<op>
// (a collective token for every op), the owner's identity, the writer's
// host and pid. It is a schema v3 record when the owner has a session and
// a v2 record otherwise, with zero counters: it is no sample.
func baseEvent(j *Joined, ts int64, context string) telemetry.Event {
	o, op := &j.Owner, j.Op
	version := 3
	if o.SessionID == "" {
		version = 2
	}
	zero := telemetry.Int(0)
	return telemetry.Event{
		SchemaVersion:           version,
		SessionID:               o.SessionID,
		TimestampNs:             ts,
		EventType:               eventTypeOf(op.Op),
		Collector:               Collector,
		SamplingIntervalMs:      o.SamplingIntervalMs,
		PID:                     op.PID,
		Host:                    op.Host,
		JobID:                   o.JobID,
		Rank:                    o.Rank,
		LocalRank:               o.LocalRank,
		WorldSize:               o.WorldSize,
		DeviceID:                o.DeviceID,
		AllocatorAllocatedBytes: zero,
		AllocatorReservedBytes:  zero,
		AllocatorChangeBytes:    zero,
		DeviceUsedBytes:         zero,
		Context:                 context,
		HasContext:              true,
	}
}
