package inspector

import (
	"errors"
	"testing"
	"time"
)

func TestPendingJoinsLateTelemetryAndGivesUpAfterTheHold(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	j := NewJoiner(time.Minute, 0, clk.now)
	p := NewPending(5*time.Second, 0, clk.now)
	op := mustParse(t, variant(t, false))
	other := *op
	other.PID = 1

	var joined []Owner
	var gaveUp []error
	onJoin := func(_ *Op, o Owner) { joined = append(joined, o) }
	onGiveUp := func(_ *Op, err error) { gaveUp = append(gaveUp, err) }

	p.Add(op, onGiveUp)
	p.Add(&other, onGiveUp)
	op.CommID = "changed" // Add keeps a copy
	p.Retry(j, onJoin, onGiveUp)
	if len(joined) != 0 || len(gaveUp) != 0 || p.Len() != 2 {
		t.Fatalf("joined %v, gave up %v, %d held: nothing can happen yet", joined, gaveUp, p.Len())
	}

	// The rank's telemetry arrives 3 s later: its record joins.
	clk.advance(3 * time.Second)
	j.Learn("node01", 438776, Owner{JobID: "job", Rank: 5, WorldSize: 8})
	var comm string
	p.Retry(j, func(o *Op, ow Owner) { comm = o.CommID; onJoin(o, ow) }, onGiveUp)
	if len(joined) != 1 || joined[0].Rank != 5 || comm != "0xe62dedaa97644a" || p.Len() != 1 {
		t.Fatalf("joined %v (comm %q), %d held", joined, comm, p.Len())
	}

	// The other never gets telemetry: given up after the hold, with the reason.
	clk.advance(2 * time.Second)
	p.Retry(j, onJoin, onGiveUp)
	if p.Len() != 1 || len(gaveUp) != 0 {
		t.Fatalf("given up at exactly the hold time: %v", gaveUp)
	}
	clk.advance(time.Millisecond)
	p.Retry(j, onJoin, onGiveUp)
	if p.Len() != 0 || len(gaveUp) != 1 || !errors.Is(gaveUp[0], ErrUnknownProcess) {
		t.Fatalf("%d held, gave up %v", p.Len(), gaveUp)
	}
}

func TestPendingBound(t *testing.T) {
	p := NewPending(time.Minute, 2, nil)
	var gaveUp []int64
	onGiveUp := func(o *Op, err error) {
		if !errors.Is(err, ErrPendingFull) {
			t.Fatalf("err %v", err)
		}
		gaveUp = append(gaveUp, o.PID)
	}
	for pid := range int64(4) {
		p.Add(&Op{PID: pid}, onGiveUp)
	}
	if p.Len() != 2 || len(gaveUp) != 2 || gaveUp[0] != 0 || gaveUp[1] != 1 {
		t.Fatalf("%d held, gave up pids %v: the oldest go first", p.Len(), gaveUp)
	}
}
