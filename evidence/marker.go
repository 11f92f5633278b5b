package evidence

import (
	"math"
	"slices"
	"strings"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// MetadataMarker reads the marker a stormlog record e stands for
// (docs/evidence-mode.md §2.1): an interval from its time to its time +
// nccl.duration_ns (its time when absent or not positive), approximate
// when nccl.time_approximate is true, and, when its metadata names a
// communicator and a sequence number, that collective interned in table.
// ok is false when e has no identity and token reports no collective token
// (reference-semantics §2.3 S2); token is asked only then. The window reads
// every marker this way (the CLI's and the processor's), so both see the
// same markers in the same records.
func MetadataMarker(e *telemetry.Event, token func() bool, table *CollectiveTable) (Marker, bool) {
	return recordMarker(e.TimestampNs, readRecordMetadata(e), token, table)
}

// recordMarker is MetadataMarker of metadata already read.
func recordMarker(ts int64, md recordMetadata, token func() bool, table *CollectiveTable) (Marker, bool) {
	comm, hasComm := md.comm.AsString()
	seq, hasSeq := metadataValueInt(md.seq)
	if !(hasComm && hasSeq) && !token() {
		return Marker{}, false
	}
	m := Marker{StartNs: ts, EndNs: ts, Collective: NoCollective}
	if d, ok := metadataValueInt(md.duration); ok && d > 0 && ts <= math.MaxInt64-d {
		m.EndNs = ts + d
	}
	if v, ok := md.approximate.AsBool(); ok && v {
		m.Approximate = true
	}
	if hasComm && hasSeq {
		m.Collective = table.intern(comm, seq, md.collective)
	}
	return m, true
}

// Identity is a marker's collective identity read from somewhere other
// than stormlog metadata (an OTLP marker span's attributes), for
// InternIdentity.
type Identity struct {
	// Valid is set when the marker names a communicator and a sequence
	// number; the other fields mean nothing without both.
	Valid        bool
	CommID       string
	Seq          int64
	Op           string
	MessageBytes int64 // 0 when not given
	NRanks       int64 // 0 when not given
	// Ranks are the members' global ranks as given (any order, repeats
	// allowed); nil when not given or given as an empty list. A non-empty
	// list none of whose entries is an integer is an empty, non-nil Ranks,
	// as Intern reads it from metadata.
	Ranks []int64
	// RanksOf, when set and Ranks is nil, reads the members the same way
	// on demand: InternIdentity reads a list once per collective instance,
	// not on each of its markers (each repeats the communicator's list).
	RanksOf RankReader
}

// RankReader reads a marker's member list: it appends the members to dst
// and returns it, non-nil even when no entry is an integer.
type RankReader interface {
	AppendRanks(dst []int64) []int64
}

// InternIdentity is Intern for an identity read from OTLP attributes: the
// same collective key and the same filling in of size and members. The
// table keeps copies of id's strings and ranks, so id may point into
// memory its caller reuses.
func (t *CollectiveTable) InternIdentity(id *Identity) int32 {
	i, c := t.entry(id.CommID, id.Op, id.Seq, true)
	c.widen(id.MessageBytes, id.NRanks)
	if c.Ranks == nil || c.inherited {
		var ranks []int64
		switch {
		case id.Ranks != nil:
			ranks = slices.Clone(id.Ranks)
		case id.RanksOf != nil:
			ranks = id.RanksOf.AppendRanks(nil)
		default:
			return i
		}
		slices.Sort(ranks)
		c.Ranks, c.inherited = t.declare(c.CommID, slices.Compact(ranks)), false
	}
	return i
}

// entry returns the index of the collective (comm, op, seq) and the entry
// itself, added when new (with copies of comm and op when clone is set).
// Intern and InternIdentity key collectives with it.
func (t *CollectiveTable) entry(comm, op string, seq int64, clone bool) (int32, *Collective) {
	if t.index == nil {
		t.index = map[collectiveKey]int32{}
	}
	key := keyOf(comm, op, seq)
	i, ok := t.index[key]
	if !ok {
		if clone {
			comm, op = strings.Clone(comm), strings.Clone(op)
			key = keyOf(comm, op, seq)
		}
		t.List = append(t.List, Collective{CommID: comm, Seq: seq, Op: op})
		i = int32(len(t.List) - 1)
		t.index[key] = i
		if ranks, ok := t.members[key.comm]; ok {
			t.List[i].Ranks, t.List[i].inherited = ranks, true
		}
	} else {
		c := &t.List[i]
		if comm != c.CommID && fullerCommID(comm, c.CommID) {
			// The id shown is the fullest form any source gave.
			if clone {
				comm = strings.Clone(comm)
			}
			c.CommID = comm
		}
		if key.op == p2pKeyOp && op < c.Op {
			// The two sides of a transfer are one instance: its op is the
			// smaller name its markers give ("recv" once the receiver's is
			// seen), whichever member's marker came first, so that the
			// processor, whose markers arrive in no fixed order across
			// ranks, names it as the CLI does.
			if clone {
				op = strings.Clone(op)
			}
			c.Op = op
		}
	}
	return i, &t.List[i]
}

// widen records a message size and a communicator size a marker gives
// (0 or less: not given); the largest seen wins.
func (c *Collective) widen(messageBytes, nranks int64) {
	c.MessageBytes = max(c.MessageBytes, messageBytes)
	c.NRanks = max(c.NRanks, nranks)
}
