package evidence

import "slices"

// accountingOutcome is what NCCL's accounting said of the co-timed
// transient changes of one collective.
type accountingOutcome int8

const (
	outcomeUnchecked accountingOutcome = iota // no report could tell
	outcomeDenied                             // denied, and confirmed on no rank
	outcomeConfirmed                          // confirmed on some rank
)

// changeSize is a change's excess and how closely its rank's samples
// measure it: the rank's weak level (a few robust spreads), within which two
// changes of one size differ by noise.
type changeSize struct{ excess, within int64 }

// commRecord counts a communicator's collectives whose co-timed transient
// changes NCCL's accounting decided in the job, and of those the ones it
// confirmed; apart, the decided ones of a size NCCL confirmed none of
// (otherSized, none of them confirmed by definition). confirmedSizes are
// the confirmed changes' excesses, sorted.
type commRecord struct {
	checked, confirmed, otherSized int
	confirmedSizes                 []int64
}

// uncheckedChange is a change whose result waits for its communicator's
// record: a co-timed transient change that no member's report could tell.
type uncheckedChange struct {
	ri     int32
	ep     *episode
	result int // index into the results
}

// note records what NCCL's accounting said of a co-timed transient change
// of collective c, of size sz; a confirmation on any rank outweighs denials
// on others (a change of NCCL's and a co-timed one merged by sparse
// sampling).
func (d *decider) note(c int32, o accountingOutcome, excess, within int64) {
	if c != NoCollective && o > d.outcomes[c] {
		d.outcomes[c], d.sizes[c] = o, changeSize{excess, within}
	}
}

// commRecords sums the outcomes per communicator.
func (d *decider) commRecords() map[string]commRecord {
	records := map[string]commRecord{}
	for c, o := range d.outcomes {
		if o == outcomeConfirmed {
			comm := CanonicalCommID(d.in.Collectives[c].CommID)
			rec := records[comm]
			rec.confirmedSizes = append(rec.confirmedSizes, d.sizes[c].excess)
			records[comm] = rec
		}
	}
	for comm, rec := range records {
		slices.Sort(rec.confirmedSizes)
		records[comm] = rec
	}
	for c, o := range d.outcomes {
		if o == outcomeUnchecked {
			continue
		}
		comm := CanonicalCommID(d.in.Collectives[c].CommID)
		rec := records[comm]
		rec.checked++
		switch {
		case o == outcomeConfirmed:
			rec.confirmed++
		case !rec.ncclSized(d.sizes[c]):
			rec.otherSized++
		}
		records[comm] = rec
	}
	return records
}

// ncclSized reports whether a change of size sz has the size, within its
// measurement, of a change NCCL's reports confirmed at the communicator.
func (r commRecord) ncclSized(sz changeSize) bool {
	i, _ := slices.BinarySearch(r.confirmedSizes, satSub(sz.excess, sz.within))
	return i < len(r.confirmedSizes) && r.confirmedSizes[i] <= satAdd(sz.excess, sz.within)
}

// leansNot reports whether NCCL's reports denied more than they confirmed
// of the communicator's co-timed changes of the size class of sz: of NCCL's
// size (within its measurement of a change they confirmed) or of another.
// NCCL sizes an op's buffers by the communicator's channels and the op's
// protocol, the same from op to op, while a co-timed cause (a bucket's or
// an optimizer's workspace) has sizes of its own; so among the changes of
// NCCL's size the share of NCCL's is that class's, and a change of another
// size is NCCL's as rarely as the other-sized ones were (never, so far as
// the reports could tell). With the share of NCCL's changes in the class
// taken as (confirmed+1)/(checked+2), the odds that an unchecked change of
// the class is NCCL's are below even whatever its reports outside the op
// say (they cannot see its buffers; evidence-mode §2.3 rule 6). Where the
// record leans the other way, or has nothing, the timing's verdict stands.
func (r commRecord) leansNot(sz changeSize) bool {
	if r.ncclSized(sz) {
		return r.checked-r.otherSized-r.confirmed > r.confirmed
	}
	return r.otherSized > 0
}

// opRecord is what NCCL's reports showed of one collective on its members:
// grown, some member's total rose by the rank's spike threshold over the
// op (within the match tolerance, as memberAccounting reads a member that
// missed a change); else shown, the probability that the members' reports
// inside the op's own interval would have shown transient buffers of
// NCCL's there (1 less the product of the members' misses).
type opRecord struct {
	done, grown bool
	shown       float64
}

// opRecordOf judges collective c's op on its members, once. Only reports
// inside the op's own interval count towards shown: NCCL allocates an op's
// buffers when it begins and frees them when it ends, so a report before
// the launch or after the end cannot see them. Such a report at t sees them
// unless they began after t or ended before it, their onset and end taken
// uniform over the launch and the end within the match tolerance.
func (d *decider) opRecordOf(c int32) opRecord {
	if d.opRecords == nil {
		d.opRecords = make([]opRecord, len(d.in.Collectives))
	}
	rec := &d.opRecords[c]
	if rec.done {
		return *rec
	}
	rec.done = true
	comm := CanonicalCommID(d.in.Collectives[c].CommID)
	tol := d.cfg.Evidence.MatchToleranceNs
	missAll := 1.0
	for _, ref := range d.m.members[c] {
		mk := &d.in.Ranks[ref.rank].Markers[ref.marker]
		if mk.Approximate {
			continue // the op's interval is not known on this member
		}
		v := d.m.accountingOf(ref.rank, d.m.opChange(mk), comm, nil)
		switch {
		case !v.present || v.untracked:
			continue
		case v.growth >= d.m.analyses[ref.rank].threshold:
			rec.grown = true
			continue
		}
		si := managerOf(d.in.Ranks[ref.rank].Accounting, d.m.rankAccounting(ref.rank).manager, comm)
		if si < 0 {
			continue
		}
		a := &d.in.Ranks[ref.rank].Accounting[si]
		miss := 1.0
		j, _ := slices.BinarySearch(a.TimesNs, mk.StartNs)
		for ; j < len(a.TimesNs) && a.TimesNs[j] <= mk.EndNs; j++ {
			t := a.TimesNs[j]
			began := min(1, float64(t-mk.StartNs+tol)/float64(2*tol+1))
			held := min(1, float64(mk.EndNs+tol-t)/float64(2*tol+1))
			miss = min(miss, 1-began*held)
		}
		missAll *= miss
	}
	rec.shown = 1 - missAll
	return *rec
}

// similarOp reports whether collectives a and b of one communicator are the
// same op at a similar size: within a factor of two, where NCCL's
// tuner picks the same algorithm and protocol, so the op's buffers behave
// alike. Unknown sizes are similar only to unknown sizes.
func similarOp(a, b *Collective) bool {
	if a.Op != b.Op {
		return false
	}
	x, y := min(a.MessageBytes, b.MessageBytes), max(a.MessageBytes, b.MessageBytes)
	if x <= 0 {
		return y <= 0
	}
	return y/2 <= x
}

// flatOdds is the odds, from the communicator's record of ops like c (the
// same op at a similar size), that NCCL allocates transient buffers at such
// an op: with the share taken as (grown+1)/(checked+2), where checked
// counts the ops whose reports grew and, for each of the others, the
// probability that its members' reports would have shown such buffers.
// NCCL's per-op behaviour at one communicator, op and size is consistent,
// so a record of ops whose reports fell inside them and never moved says
// its ops do not allocate transiently. It is read only for a communicator
// with no decided co-timed change (evidence-mode §2.3 rule 7): where NCCL's
// reports decided some, they tell of the co-timed changes themselves. It is
// asked only once every change has been judged, when the outcomes no longer
// move, so each collective's odds are computed once: every member of a
// large job's op asks for the same.
func (d *decider) flatOdds(c int32) float64 {
	if d.commOps == nil {
		d.commOps = map[string][]int32{}
		for o := range d.in.Collectives {
			comm := CanonicalCommID(d.in.Collectives[o].CommID)
			d.commOps[comm] = append(d.commOps[comm], int32(o))
		}
		d.odds = make([]float64, len(d.in.Collectives))
	}
	if d.odds[c] > 0 {
		return d.odds[c]
	}
	self := &d.in.Collectives[c]
	grown, flat := 0.0, 0.0
	for _, o := range d.commOps[CanonicalCommID(self.CommID)] {
		if o == c || !similarOp(self, &d.in.Collectives[o]) {
			continue
		}
		if rec := d.opRecordOf(o); rec.grown || d.outcomes[o] == outcomeConfirmed {
			grown++
		} else {
			flat += rec.shown
		}
	}
	d.odds[c] = (grown + 1) / (flat + 1)
	return d.odds[c]
}
