package inspector

import (
	"fmt"
	"testing"

	"github.com/collectiveattr/collectiveattr/evidence"
)

// p2pRecord is a verbose P2P record of comm-local rank rank (writing
// process pid) on communicator comm: a Send to peer or a Recv from it.
func p2pRecord(t *testing.T, comm string, rank, peer, pid int64, name string) []byte {
	t.Helper()
	return variant(t, true,
		`"0xe62dedaa97644a"`, `"`+comm+`"`,
		`"rank":4,"n_ranks":8`, fmt.Sprintf(`"rank":%d,"n_ranks":8`, rank),
		`"pid":438776`, fmt.Sprintf(`"pid":%d`, pid),
		`"Send"`, `"`+name+`"`,
		`"p2p_peer":5`, fmt.Sprintf(`"p2p_peer":%d`, peer))
}

type p2pLine struct {
	comm       string
	rank, peer int64
	name       string
	// want names the transfer the record must be one side of ("" for
	// records that match none of the other file's).
	want string
}

// TestPairIdentity reads a sender's file and a receiver's file, each with
// one Parser as the CLI and the processor do, and interns their evidence
// markers: the k-th send from rank 4 to rank 5 of a communicator and the
// k-th recv at 5 from 4 are one collective instance, of 2 members; other
// directions, other pairs and other communicators are not.
func TestPairIdentity(t *testing.T) {
	const commA, commB = "0xaaaa", "0xbbbb"
	files := [][]p2pLine{
		{ // process of comm rank 4 of commA and commB
			{commA, 4, 5, "Send", "A 4->5 #0"},
			{commA, 4, 6, "Send", ""},          // another pair
			{commA, 4, 5, "Recv", "A 5->4 #0"}, // the other direction
			{commB, 4, 5, "Send", "B 4->5 #0"}, // another communicator
			{commA, 4, 5, "Send", "A 4->5 #1"},
			{commA, 4, 5, "Send", "A 4->5 #2"},
		},
		{ // process of comm rank 5 of commA and commB
			{commB, 5, 4, "Recv", "B 4->5 #0"},
			{commA, 5, 4, "Recv", "A 4->5 #0"},
			{commA, 5, 4, "Send", "A 5->4 #0"},
			{commA, 5, 4, "Recv", "A 4->5 #1"},
			{commA, 5, 7, "Recv", ""}, // another pair
			{commA, 5, 4, "Recv", "A 4->5 #2"},
		},
	}
	var table evidence.CollectiveTable
	byName := map[string]int32{}
	seen := map[int32]string{}
	for fi, lines := range files {
		var p Parser
		for li, l := range lines {
			op, err := p.Parse(p2pRecord(t, l.comm, l.rank, l.peer, int64(100+fi), l.name))
			if err != nil {
				t.Fatal(err)
			}
			ev := EvidenceMarker(nil, &Joined{Op: &op, Owner: testOwner})[0]
			md := ev.MetadataMap()
			comm, _ := md[evidence.KeyCommID].(string)
			seq, ok := evidence.MetadataInt(md[evidence.KeySeq])
			if !ok {
				t.Fatalf("file %d line %d: no nccl.seq in %v", fi, li, md)
			}
			if n, _ := evidence.MetadataInt(md[evidence.KeyCommNRanks]); n != 2 {
				t.Errorf("file %d line %d: nccl.comm.nranks %v, want 2 (a pair)", fi, li, md[evidence.KeyCommNRanks])
			}
			c := table.Intern(comm, seq, md)
			where := fmt.Sprintf("file %d line %d (%s %d)", fi, li, comm, seq)
			if l.want == "" {
				if other, dup := seen[c]; dup {
					t.Errorf("%s: same instance as %s", where, other)
				}
			} else if first, ok := byName[l.want]; !ok {
				if other, dup := seen[c]; dup {
					t.Errorf("%s (%s): same instance as %s", where, l.want, other)
				}
				byName[l.want] = c
			} else if first != c {
				t.Errorf("%s: %s is instance %d on one side, %d on the other", where, l.want, first, c)
			}
			seen[c] = where
		}
	}
	if got, want := len(table.List), 7; got != want {
		t.Fatalf("%d collective instances, want %d: %+v", got, want, table.List)
	}
}

func TestPairSeqCountsPerFile(t *testing.T) {
	send := func(t *testing.T) []byte { return p2pRecord(t, "0xaaaa", 4, 5, 1, "Send") }
	var p Parser
	for k := range int64(3) {
		op, err := p.Parse(send(t))
		if err != nil {
			t.Fatal(err)
		}
		if !op.HasPairSeq || op.PairSeq != k || op.PairCommID() != "0xaaaa/4->5" {
			t.Fatalf("send %d: pair %q seq %d (%v)", k, op.PairCommID(), op.PairSeq, op.HasPairSeq)
		}
	}
	// A malformed or non-op line is no transfer: it takes no number.
	if _, err := p.Parse([]byte(`{"header":`)); err == nil {
		t.Fatal("torn line parsed")
	}
	if op, _ := p.Parse(send(t)); op.PairSeq != 3 {
		t.Fatalf("after a torn line: seq %d, want 3", op.PairSeq)
	}
	// A new file counts from 0.
	p.ResetContext()
	if op, _ := p.Parse(send(t)); op.PairSeq != 0 {
		t.Fatalf("after ResetContext: seq %d, want 0", op.PairSeq)
	}
	// A collective has no pair number; a recv's pair is (peer, own rank).
	coll := mustParse(t, variant(t, false))
	if coll.HasPairSeq {
		t.Fatal("collective numbered as a transfer")
	}
	recv := mustParse(t, p2pRecord(t, "0xaaaa", 5, 4, 2, "Recv"))
	if got := recv.PairCommID(); got != "0xaaaa/4->5" {
		t.Fatalf("recv at 5 from 4: %q", got)
	}
}

func TestPairCounterBounded(t *testing.T) {
	var c pairCounter
	op := Op{Kind: P2P, Name: "Send", Op: "send", CommID: "0x1", NRanks: 1 << 20, HasPeer: true, Peer: 1}
	for i := range int64(maxPairs) {
		op.CommRank = i + 2
		c.number(&op)
	}
	op.CommRank, op.HasPairSeq = 0, false
	c.number(&op)
	if op.HasPairSeq || len(c.next) != maxPairs {
		t.Fatalf("a new direction past the bound: numbered %v, %d directions", op.HasPairSeq, len(c.next))
	}
	// Unnumbered, it is the record as it is: no sequence number.
	md := EvidenceMarker(nil, &Joined{Op: &op, Owner: testOwner})[0].MetadataMap()
	if md[evidence.KeyCommID] != "0x1" || md[evidence.KeySeq] != nil {
		t.Fatalf("unnumbered transfer's marker: %v", md)
	}
	op.CommRank = 2 // a known direction still counts
	c.number(&op)
	if !op.HasPairSeq || op.PairSeq != 1 {
		t.Fatalf("known direction: %v %d", op.HasPairSeq, op.PairSeq)
	}
}
