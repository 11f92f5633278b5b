package inspector

import "time"

// Pending holds records that could not be joined yet: a rank's own
// telemetry may reach the collector a little after its Inspector records.
// Each retry joins what it can; a record held longer than the hold time is
// given up with the reason of its last join attempt. The oldest record
// makes room when the bound is reached. Time comes from the injected clock.
// A Pending is not safe for concurrent use.
type Pending struct {
	hold  time.Duration
	max   int
	now   func() time.Time
	items []pendingOp
}

type pendingOp struct {
	op    Op
	since time.Time
}

// NewPending holds records for up to hold, at most maxOps of them (≤ 0: no
// bound); now is its clock (nil: time.Now).
func NewPending(hold time.Duration, maxOps int, now func() time.Time) *Pending {
	if now == nil {
		now = time.Now
	}
	return &Pending{hold: hold, max: maxOps, now: now}
}

// Add holds a copy of op. When the bound is reached the oldest held record
// is given up first, through gaveUp with ErrPendingFull.
func (p *Pending) Add(op *Op, gaveUp func(*Op, error)) {
	if p.max > 0 && len(p.items) >= p.max {
		gaveUp(&p.items[0].op, ErrPendingFull)
		p.items = p.items[1:]
	}
	p.items = append(p.items, pendingOp{op: *op, since: p.now()})
}

// Retry joins every held record it can and calls joined for each; those
// held longer than the hold time and still unjoined go to gaveUp with the
// join's error (ErrUnknownProcess or an *AmbiguousError). Records keep
// their order.
func (p *Pending) Retry(j *Joiner, joined func(*Op, Owner), gaveUp func(*Op, error)) {
	now := p.now()
	kept := p.items[:0]
	for i := range p.items {
		it := &p.items[i]
		owner, err := j.Join(it.op.Host, it.op.PID)
		switch {
		case err == nil:
			joined(&it.op, owner)
		case now.Sub(it.since) > p.hold:
			gaveUp(&it.op, err)
		default:
			kept = append(kept, *it)
		}
	}
	clear(p.items[len(kept):])
	p.items = kept
}

// Len is the number of records held.
func (p *Pending) Len() int { return len(p.items) }
