package jobsim

import (
	"encoding/json"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Collective identity keys of a marker (evidence-mode §2.1). The OTLP span attribute and
// the stormlog metadata key are the same string.
const (
	KeyCommID       = "nccl.comm.id"
	KeySeq          = "nccl.seq"
	KeyOp           = "nccl.op"
	KeyMessageBytes = "nccl.message_bytes"
	KeyCommNRanks   = "nccl.comm.nranks"
	KeyCommRanks    = "nccl.comm.ranks"
	KeyPeer         = "nccl.peer"
	// KeyDurationNs is stormlog-only: a span carries its duration as start..end.
	KeyDurationNs = "nccl.duration_ns"
)

// MarkerIdentity is what a collective marker says about the op it marks: which
// communicator, which op on it, how large, who takes part. Every member of the
// communicator reports the same CommID and Seq for the same op.
type MarkerIdentity struct {
	CommID       string
	Seq          int64
	Op           string
	MessageBytes int64
	// NRanks is the communicator's size; CommRanks its global ranks (all members,
	// reporting or not), ascending, or nil when the marker does not list them.
	NRanks    int
	CommRanks []int
	// Peer is the other rank of a send or recv, -1 for a collective.
	Peer int
}

// worldIdentity is the identity of call c of the default simulation: every collective
// runs on the one world communicator.
func (s *Scenario) worldIdentity(c Collective) MarkerIdentity {
	return MarkerIdentity{CommID: s.CommID, Seq: c.Seq, Op: c.Op, MessageBytes: c.MsgBytes, NRanks: s.Config.Ranks, CommRanks: s.worldRanks(), Peer: -1}
}

func (s *Scenario) worldRanks() []int {
	ranks := make([]int, s.Config.Ranks)
	for r := range ranks {
		ranks[r] = r
	}
	return ranks
}

// PutSpanAttributes adds the identity to a marker span's attributes; the span's start and
// end already give the op's interval.
func (id MarkerIdentity) PutSpanAttributes(a pcommon.Map) {
	a.PutStr(KeyCommID, id.CommID)
	a.PutInt(KeySeq, id.Seq)
	a.PutStr(KeyOp, id.Op)
	a.PutInt(KeyMessageBytes, id.MessageBytes)
	a.PutInt(KeyCommNRanks, int64(id.NRanks))
	if id.CommRanks != nil {
		ranks := a.PutEmptySlice(KeyCommRanks)
		ranks.EnsureCapacity(len(id.CommRanks))
		for _, r := range id.CommRanks {
			ranks.AppendEmpty().SetInt(int64(r))
		}
	}
	if id.Peer >= 0 {
		a.PutInt(KeyPeer, int64(id.Peer))
	}
}

// Metadata returns the identity as stormlog marker metadata with the op's duration.
// Numbers are json.Number, as the strict decoder yields them, so events built in memory
// equal the same events read back from JSON.
func (id MarkerIdentity) Metadata(durationNs int64) map[string]any {
	md := map[string]any{
		KeyCommID:       id.CommID,
		KeySeq:          jsonInt(id.Seq),
		KeyOp:           id.Op,
		KeyMessageBytes: jsonInt(id.MessageBytes),
		KeyCommNRanks:   jsonInt(int64(id.NRanks)),
		KeyDurationNs:   jsonInt(durationNs),
	}
	if id.CommRanks != nil {
		ranks := make([]any, len(id.CommRanks))
		for i, r := range id.CommRanks {
			ranks[i] = jsonInt(int64(r))
		}
		md[KeyCommRanks] = ranks
	}
	if id.Peer >= 0 {
		md[KeyPeer] = jsonInt(int64(id.Peer))
	}
	return md
}

func jsonInt(v int64) json.Number { return json.Number(strconv.FormatInt(v, 10)) }
