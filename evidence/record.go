package evidence

// accountingOutcome is what NCCL's accounting said of the co-timed
// transient changes of one collective.
type accountingOutcome int8

const (
	outcomeUnchecked accountingOutcome = iota // no report could tell
	outcomeDenied                             // denied, and confirmed on no rank
	outcomeConfirmed                          // confirmed on some rank
)

// commRecord counts a communicator's collectives whose co-timed transient
// changes NCCL's accounting decided in the job, and of those the ones it
// confirmed.
type commRecord struct{ checked, confirmed int }

// uncheckedChange is a change whose result waits for its communicator's
// record: a co-timed transient change that no member's report could tell.
type uncheckedChange struct {
	ri     int32
	ep     *episode
	result int // index into the results
}

// note records what NCCL's accounting said of a co-timed transient change
// of collective c; a confirmation on any rank outweighs denials on others
// (a change of NCCL's and a co-timed one merged by sparse sampling).
func (d *decider) note(c int32, o accountingOutcome) {
	if c != NoCollective && o > d.outcomes[c] {
		d.outcomes[c] = o
	}
}

// commRecords sums the outcomes per communicator.
func (d *decider) commRecords() map[string]commRecord {
	records := map[string]commRecord{}
	for c, o := range d.outcomes {
		if o == outcomeUnchecked {
			continue
		}
		comm := CanonicalCommID(d.in.Collectives[c].CommID)
		rec := records[comm]
		rec.checked++
		if o == outcomeConfirmed {
			rec.confirmed++
		}
		records[comm] = rec
	}
	return records
}

// leansNot reports whether NCCL's reports denied more of the
// communicator's co-timed changes they could check than they confirmed: a
// co-timed change there that every member's reports missed is then more
// likely not NCCL's (evidence-mode §2.3). With the share of NCCL's changes
// among them taken as (confirmed+1)/(checked+2), the odds of NCCL's after
// the silence, that share's odds times the probability that the reports
// missed a change of NCCL's, are below even for any silence; where the
// record leans the other way, or has nothing, the silence alone decides.
// The caller denies on the record only a change some report could have
// seen (a miss below 1): one that no report came near has no evidence of
// its own.
func (r commRecord) leansNot() bool {
	return r.checked-r.confirmed > r.confirmed
}
