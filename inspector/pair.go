package inspector

import "strconv"

// maxPairs bounds the transfer directions one Parser counts: a direction
// first seen when the table is full gets no pair sequence number, so a
// stream of ever-new communicators cannot grow it.
const maxPairs = 1 << 16

// pairKey is one direction of transfers on a communicator, as one side
// counts it: Send records on the sender, Recv records on the receiver.
// Both sides are kept apart (recv) because a process may hold several
// ranks of one communicator, or send to itself.
type pairKey struct {
	comm     string
	src, dst int64
	recv     bool
}

// pairCounter numbers, per file, the P2P records of each direction. NCCL
// matches the k-th send from src to dst on a communicator with the k-th
// receive at dst from src, so the k-th Send record in src's file and the
// k-th Recv record in dst's file are the two sides of one transfer, when
// both files are read from their beginning and both sides tracked the same
// transfers (nccl-inspector §3: p2p_sn cannot serve, it counts the plugin's
// own ops per process).
type pairCounter struct {
	next map[pairKey]int64
}

// number sets op's PairSeq (a P2P record with a peer), the count of the
// records of its direction before it in the file.
func (c *pairCounter) number(op *Op) {
	if op.Kind != P2P || !op.HasPeer {
		return
	}
	src, dst := op.PairRanks()
	key := pairKey{comm: op.CommID, src: src, dst: dst, recv: op.Op == "recv"}
	k, ok := c.next[key]
	if !ok {
		if c.next == nil {
			c.next = make(map[pairKey]int64)
		}
		if len(c.next) >= maxPairs {
			return
		}
	}
	c.next[key] = k + 1
	op.PairSeq, op.HasPairSeq = k, true
}

// reset forgets the counts: the next records are a new file's.
func (c *pairCounter) reset() { clear(c.next) }

// PairRanks are the sending and the receiving comm-local ranks of a P2P op:
// (header.rank, p2p_peer) for a Send, (p2p_peer, header.rank) for a Recv.
func (o *Op) PairRanks() (src, dst int64) {
	if o.Op == "recv" {
		return o.Peer, o.CommRank
	}
	return o.CommRank, o.Peer
}

// PairCommID is the communicator id a P2P op's transfer is identified by
// (with PairSeq as its sequence number): header.id, a slash, and the
// sending and receiving comm-local ranks joined by "->", e.g.
// "0xe62dedaa97644a/4->5". Every transfer from one rank to another on one
// communicator shares it, on the sender and on the receiver.
func (o *Op) PairCommID() string {
	src, dst := o.PairRanks()
	b := make([]byte, 0, len(o.CommID)+24)
	b = append(b, o.CommID...)
	b = append(b, '/')
	b = strconv.AppendInt(b, src, 10)
	b = append(b, "->"...)
	b = strconv.AppendInt(b, dst, 10)
	return string(b)
}
