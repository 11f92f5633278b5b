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
