package jobsim

import (
	"encoding/json"
	"strconv"
	"time"

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

// worldIdentity is the identity of call c of the default simulation on rank r: every
// collective runs on the one world communicator, whose members the marker lists when
// declaresMembers says so.
func (s *Scenario) worldIdentity(r int, c Collective) MarkerIdentity {
	id := MarkerIdentity{CommID: s.CommID, Seq: c.Seq, Op: c.Op, MessageBytes: c.MsgBytes, NRanks: s.Config.Ranks, Peer: -1}
	if s.declaresMembers(r, c) {
		id.CommRanks = s.worldRanks()
	}
	return id
}

// declaresMembers tells whether rank r's marker of c lists the communicator's members:
// on every marker with MembersOnEveryMarker; otherwise on the rank's first marker and
// its first marker ending in each later DeclareInterval, counted from the start of its
// first step. A pure function of the scenario, so a run cut into flush intervals (or replayed)
// declares on the same markers.
func (s *Scenario) declaresMembers(r int, c Collective) bool {
	if s.Config.MemberLists == MembersOnEveryMarker {
		return true
	}
	perStep := int64(len(stepCollectives))
	first := int64(s.firstStep(r))
	if c.Seq <= first*perStep {
		return true
	}
	origin := time.Duration(first) * s.Config.StepPeriod
	prev := s.collectiveOn(r, int((c.Seq-1)/perStep), int((c.Seq-1)%perStep))
	return (c.End-origin)/DeclareInterval > (prev.End-origin)/DeclareInterval
}

// firstStep is the first step rank r records (stepsEndingIn: a step that starts before
// the rank reports is not recorded).
func (s *Scenario) firstStep(r int) int {
	start := s.Ranks[r].Start
	period := s.Config.StepPeriod
	return int((start + period - 1) / period)
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
