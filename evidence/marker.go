package evidence

import (
	"math"
	"slices"
	"strings"
)

// MetadataMarker reads the marker a stormlog record at ts with metadata md
// stands for (docs/evidence-mode.md §2.1): an interval from ts to ts +
// nccl.duration_ns (ts when absent or not positive), approximate when
// nccl.time_approximate is true, and, when md names a communicator and a
// sequence number, that collective interned in table. ok is false when md
// has no identity and token reports no collective token (reference-semantics
// §2.3 S2); token is asked only then. evidence.Builder and the processor's
// buffers both read markers with it, so the CLI and the processor see the
// same markers in the same records.
func MetadataMarker(ts int64, md map[string]any, token func() bool, table *CollectiveTable) (Marker, bool) {
	comm, hasComm := md[KeyCommID].(string)
	seq, hasSeq := MetadataInt(md[KeySeq])
	if !(hasComm && hasSeq) && !token() {
		return Marker{}, false
	}
	m := Marker{StartNs: ts, EndNs: ts, Collective: NoCollective}
	if d, ok := MetadataInt(md[KeyDurationNs]); ok && d > 0 && ts <= math.MaxInt64-d {
		m.EndNs = ts + d
	}
	if v, ok := md[KeyTimeApproximate].(bool); ok && v {
		m.Approximate = true
	}
	if hasComm && hasSeq {
		m.Collective = table.Intern(comm, seq, md)
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
}

// InternIdentity is Intern for an identity read from OTLP attributes: the
// same collective key and the same filling in of size and members. The
// table keeps copies of id's strings and ranks, so id may point into
// memory its caller reuses.
func (t *CollectiveTable) InternIdentity(id *Identity) int32 {
	i, c := t.entry(id.CommID, id.Op, id.Seq, true)
	c.widen(id.MessageBytes, id.NRanks)
	if c.Ranks == nil && id.Ranks != nil {
		ranks := slices.Clone(id.Ranks)
		slices.Sort(ranks)
		c.Ranks = slices.Compact(ranks)
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
	} else if c := &t.List[i]; key.op == p2pKeyOp && op < c.Op {
		// The two sides of a transfer are one instance: its op is the
		// smaller name its markers give ("recv" once the receiver's is
		// seen), whichever member's marker came first, so that the
		// processor, whose markers arrive in no fixed order across ranks,
		// names it as the CLI does.
		if clone {
			op = strings.Clone(op)
		}
		c.Op = op
	}
	return i, &t.List[i]
}

// widen records a message size and a communicator size a marker gives
// (0 or less: not given); the largest seen wins.
func (c *Collective) widen(messageBytes, nranks int64) {
	c.MessageBytes = max(c.MessageBytes, messageBytes)
	c.NRanks = max(c.NRanks, nranks)
}
