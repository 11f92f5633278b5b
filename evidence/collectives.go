package evidence

import (
	"slices"
)

// CollectiveTable interns collective instances, one entry per identity, and
// fills each in from the markers that name it (op, size, members). The
// window keys every job's collectives with it (the CLI's and the
// processor's), so both match markers alike.
type CollectiveTable struct {
	// List holds the collectives in first-seen order; an index returned by
	// Intern points into it.
	List  []Collective
	index map[collectiveKey]int32
	// members holds each communicator's member list as last declared
	// (sorted, distinct): a communicator's membership may be declared once,
	// on its first marker, and instances whose markers list none share it;
	// instances whose lists equal it share its memory. Keyed by the
	// communicator's canonical id, as collectives are.
	members map[string][]int64
	// listText holds, by the same key, the text a streamed marker's
	// declaration was read from: a reader shares one text between the
	// markers listing a communicator's members, and a later instance
	// listing that text again takes the declared list without parsing it
	// (one text held per communicator).
	listText map[string]string
}

// declare records ranks (sorted, distinct) as comm's members and returns
// the list to keep: the one already declared when equal.
func (t *CollectiveTable) declare(comm string, ranks []int64) []int64 {
	comm = CanonicalCommID(comm)
	if old, ok := t.members[comm]; ok && slices.Equal(old, ranks) {
		return old
	}
	delete(t.listText, comm)
	if t.members == nil {
		t.members = map[string][]int64{}
	}
	t.members[comm] = ranks
	return ranks
}

// collectiveKey identifies one collective instance. The op is part of it
// because NCCL numbers each collective type of a communicator on its own
// counter (comm->seqNumber[func], the Inspector's coll_sn): an all_gather
// and an all_reduce of one communicator share sequence numbers. A source
// that numbers every op of a communicator on one counter gives the same
// instances with or without the op. The two sides of a point-to-point
// transfer are one instance: their ops differ (send on one member, recv on
// the other), so both key as p2pKeyOp.
type collectiveKey struct {
	comm string
	op   string
	seq  int64
}

// p2pKeyOp is the op a send or a recv keys its instance with.
const p2pKeyOp = "send/recv"

// keyOf keys a collective by its communicator's canonical id
// (CanonicalCommID), so that sources writing one communicator's hash
// differently name one collective.
func keyOf(comm, op string, seq int64) collectiveKey {
	if op == "send" || op == "recv" {
		op = p2pKeyOp
	}
	return collectiveKey{CanonicalCommID(comm), op, seq}
}

// Intern returns the index of the collective (comm, op, seq) that a
// marker's metadata md names, adding it when new, and fills in what md
// adds (size, members). A marker without nccl.op has op "".
func (t *CollectiveTable) Intern(comm string, seq int64, md map[string]any) int32 {
	return t.intern(comm, seq, collectiveMetadataOf(md))
}

// intern is Intern of the values read from a marker's metadata. The
// strings it keeps are cloned: a streamed event's strings may share a
// block of text with many others.
func (t *CollectiveTable) intern(comm string, seq int64, md collectiveMetadata) int32 {
	op, _ := md.op.AsString()
	i, c := t.entry(comm, op, seq, true)
	msg, _ := metadataValueInt(md.messageBytes)
	nranks, _ := metadataValueInt(md.nRanks)
	c.widen(msg, nranks)
	if c.Ranks == nil || c.inherited {
		text, streamed := md.ranks.Text()
		if streamed && text == t.listText[CanonicalCommID(c.CommID)] {
			c.Ranks, c.inherited = t.members[CanonicalCommID(c.CommID)], false
		} else if list, ok := md.ranks.Value().([]any); ok && len(list) > 0 {
			ranks := make([]int64, 0, len(list))
			for _, x := range list {
				if r, ok := MetadataInt(x); ok {
					ranks = append(ranks, r)
				}
			}
			slices.Sort(ranks)
			c.Ranks, c.inherited = t.declare(c.CommID, slices.Compact(ranks)), false
			if streamed {
				if t.listText == nil {
					t.listText = map[string]string{}
				}
				t.listText[CanonicalCommID(c.CommID)] = text
			}
		}
	}
	return i
}

// Reset replaces the table's entries with list (in that order, each
// identity once), for a caller that drops entries no marker refers to.
func (t *CollectiveTable) Reset(list []Collective) {
	if t.index == nil {
		t.index = map[collectiveKey]int32{}
	}
	clear(t.index)
	for i, c := range list {
		t.index[keyOf(c.CommID, c.Op, c.Seq)] = int32(i)
		if c.Ranks != nil && !c.inherited {
			list[i].Ranks = t.declare(c.CommID, c.Ranks)
		}
	}
	t.List = list
}

// Index returns the index of the collective (comm, op, seq), keyed as
// Intern keys it; false when the table does not hold it.
func (t *CollectiveTable) Index(comm, op string, seq int64) (int32, bool) {
	i, ok := t.index[keyOf(comm, op, seq)]
	return i, ok
}
