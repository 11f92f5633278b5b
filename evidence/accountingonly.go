package evidence

import (
	"cmp"
	"math"
	"slices"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// accountingOnlyConfidence is the confidence of a result NCCL's accounting
// alone makes: NCCL says the memory was its own, but no sample measured the
// change, so it stays below a change both show (0.95).
const accountingOnlyConfidence = 0.9

// accountingOnly appends the changes of rank ri that NCCL's reports show and
// no memory sample of the rank saw (evidence-mode §2.4): inside an op of the
// rank (its interval widened by the match tolerance), reports of the op's
// communicator above the level of the reports on both sides of them (on
// one side where reporting began or ended inside the op), by at
// least the rank's spike threshold, where the rank's samples bracket the
// raised reports and no change of theirs could have been there. Only where
// the rank's accounting follows NCCL's buffers, once per memory manager (a
// communicator sharing it reads the manager's series). Each is one result
// per (op, rank): collective_confirmed, bytes the growth over the higher
// level of the two sides (a step that stays is no transient's), its
// interval the reports bracketing the raised ones within the widened op.
func (d *decider) accountingOnly(ri int32, cands []accountingCandidate) []accountingCandidate {
	rd := &d.in.Ranks[ri]
	if len(rd.Accounting) == 0 || len(rd.Markers) == 0 || rd.Samples.Len() < 2 {
		return cands
	}
	ra := d.m.rankAccounting(ri)
	if !ra.tracked {
		return cands
	}
	// The latest raised report counted per manager: two ops of communicators
	// sharing one manager see the same growth.
	counted := slices.Grow(d.counted[:0], len(rd.Accounting))[:len(rd.Accounting)]
	clear(counted)
	d.counted = counted
	// A rank too short to analyse has no threshold yet: growth must still
	// be growth.
	threshold := max(d.m.analyses[ri].threshold, 1)
	for mi := range rd.Markers {
		mk := &rd.Markers[mi]
		if mk.Collective == NoCollective || mk.Approximate {
			continue // an op without identity or a known interval
		}
		mgr := managerOf(rd.Accounting, ra.manager, CanonicalCommID(d.in.Collectives[mk.Collective].CommID))
		if mgr < 0 {
			continue
		}
		a := &rd.Accounting[mgr]
		tol := d.m.tolerance(mk)
		from, to := satSub(mk.StartNs, tol.before), satAdd(mk.EndNs, tol.after)
		lo, _ := slices.BinarySearch(a.TimesNs, from)
		hi, _ := slices.BinarySearch(a.TimesNs, to+1)
		// The series' first report inside the op (reporting began there, in
		// a job's first seconds) has no level before it: a transient of
		// NCCL's leaves its total where it was, so the level after it
		// stands alone (the level before would only raise it). Its last
		// report inside the op (reporting ended there: the job's end) has
		// no level after it: the level before stands alone where the
		// rank's samples show that nothing stayed (fellBack).
		ended := hi == len(a.TimesNs)
		if lo == hi || ended && lo == 0 || lo > 0 && a.TimesNs[lo-1] < satSub(from, accountingLookbackNs) ||
			!ended && a.TimesNs[hi] > satAdd(to, accountingLookbackNs) {
			continue // no report inside, or none near on a side
		}
		level := int64(math.MinInt64)
		if !ended {
			level = d.restingLevel(ri, a, mgr, mi, hi, 1, satAdd(to, accountingLookbackNs))
		}
		if lo > 0 {
			level = max(level, d.restingLevel(ri, a, mgr, mi, lo-1, -1, satSub(from, accountingLookbackNs)))
		}
		first, last, peak := -1, -1, int64(0)
		for k := lo; k < hi; k++ {
			if a.Bytes[k]-level >= threshold {
				if first < 0 {
					first = k
				}
				last, peak = k, max(peak, a.Bytes[k])
			}
		}
		if first < 0 || a.TimesNs[first] <= counted[mgr] {
			continue
		}
		raisedFrom, raisedTo := a.TimesNs[first], a.TimesNs[last]
		if !d.unseen(ri, raisedFrom, raisedTo, from, to) || ended && !d.fellBack(ri, raisedFrom, raisedTo, threshold) {
			continue
		}
		counted[mgr] = raisedTo
		// The change lay between the reports around the raised ones, and
		// within the op: NCCL holds a transient's buffers while it runs.
		before, after := from, to
		if first > 0 {
			before = max(a.TimesNs[first-1], from)
		}
		if last+1 < len(a.TimesNs) {
			after = min(a.TimesNs[last+1], to)
		}
		if r, ok := d.accountingOnlyResult(ri, int32(mi), before, after, peak-level); ok {
			cands = append(cands, accountingCandidate{result: r, coll: mk.Collective, raisedFrom: raisedFrom, raisedTo: raisedTo,
				inOp: raisedFrom >= mk.StartNs && raisedFrom <= mk.EndNs || !d.inOtherOp(ri, mgr, mi, raisedFrom)})
		}
	}
	return cands
}

// restingLevel is NCCL's level of series a (manager mgr of rank ri) beside
// the op of marker mi, read from report k on, going by step (-1 earlier, +1
// later) while within limit (and within the accounting lookback of the
// report before, while those lie in other ops): the least of the reports up
// to the first that lies inside no other op of the rank on that manager
// (widened by the match tolerance). A report taken while another op of the manager ran may hold
// that op's transient buffers (reports polled about once a step fall in the
// ops of the steps around), so it bounds the level only from above.
func (d *decider) restingLevel(ri int32, a *AccountingSeries, mgr, mi, k, step int, limit int64) int64 {
	level := a.Bytes[k]
	for j := k; j >= 0 && j < len(a.TimesNs) && (step < 0 && a.TimesNs[j] >= limit || step > 0 && a.TimesNs[j] <= limit); j += step {
		level = min(level, a.Bytes[j])
		if !d.inOtherOp(ri, mgr, mi, a.TimesNs[j]) {
			break
		}
		// Reports in a run of ops each reach the lookback further.
		if step < 0 {
			limit = satSub(a.TimesNs[j], accountingLookbackNs)
		} else {
			limit = satAdd(a.TimesNs[j], accountingLookbackNs)
		}
	}
	return level
}

// inOtherOp reports whether t lies inside the interval of an op of rank ri
// other than marker mi whose communicator's memory manager is mgr.
func (d *decider) inOtherOp(ri int32, mgr, mi int, t int64) bool {
	rd := &d.in.Ranks[ri]
	markers := rd.Markers
	manager := d.m.rankAccounting(ri).manager
	tol := d.cfg.Evidence.MatchToleranceNs
	i := firstStartingAt(markers, satSub(t, satAdd(d.m.maxDur[ri], tol)))
	for ; i < len(markers) && markers[i].StartNs <= satAdd(t, tol); i++ {
		x := &markers[i]
		if i == mi || x.Collective == NoCollective || x.Approximate || t < satSub(x.StartNs, tol) || t > satAdd(x.EndNs, tol) {
			continue
		}
		if managerOf(rd.Accounting, manager, CanonicalCommID(d.in.Collectives[x.Collective].CommID)) == mgr {
			return true
		}
	}
	return false
}

// managerOf is the series standing for the memory manager of communicator
// comm (canonical) among a rank's series, or -1 when it has none.
func managerOf(series []AccountingSeries, manager []int, comm string) int {
	if i := seriesOf(series, comm); i >= 0 {
		return manager[i]
	}
	return -1
}

// seriesOf is the index of communicator comm's (canonical) series among a
// rank's series, or -1 when it has none.
func seriesOf(series []AccountingSeries, comm string) int {
	for i := range series {
		if CanonicalCommID(series[i].CommID) == comm {
			return i
		}
	}
	return -1
}

// sharesManager reports whether series i shares its memory manager with
// another series (manager: AccountingManagers).
func sharesManager(manager []int, i int) bool {
	for j, m := range manager {
		if j != i && m == manager[i] {
			return true
		}
	}
	return false
}

// unseen reports whether no sample of rank ri saw a change in [from, to]
// inside the op widened to [opFrom, opTo]: the rank's samples bracket it,
// none lies in it, and no change the samples show could have been there. A
// transient could only where it was seen high inside the widened op, or
// across it: NCCL's transient buffers of the op live within the op, so a
// change whose possible onset or end spans the op but whose high samples
// all lie before or after it saw something else. A step could only where
// first seen inside the widened op: the raised reports fell back after it,
// so a step first seen later is not what they show (evidence-mode §2.4).
func (d *decider) unseen(ri int32, from, to, opFrom, opTo int64) bool {
	if !d.unsampled(ri, from, to) {
		return false
	}
	for k := range d.m.analyses[ri].episodes {
		ep := &d.m.analyses[ri].episodes[k]
		hi := ep.fallHi
		if ep.persistent {
			hi = ep.riseHi
		}
		if ep.riseLo < to && hi > from && (ep.persistent && ep.riseHi >= opFrom && ep.riseHi <= opTo ||
			!ep.persistent && ep.riseHi <= opTo && ep.fallLo >= opFrom) {
			return false
		}
	}
	return true
}

// fellBack reports whether rank ri's first sample after [from, to] reads
// less than threshold above its last sample before (the samples bracket
// it): NCCL's memory is part of the hidden memory the samples measure, so
// growth of NCCL's there that stayed (a step at the op) would have raised
// the sample after by as much.
func (d *decider) fellBack(ri int32, from, to, threshold int64) bool {
	s := &d.in.Ranks[ri].Samples
	i, _ := slices.BinarySearch(s.TimesNs, from)
	k, _ := slices.BinarySearch(s.TimesNs, to+1)
	return i > 0 && k < s.Len() && s.GapBytes[k]-s.GapBytes[i-1] < threshold
}

// unsampled reports whether rank ri's samples bracket [from, to] with none
// inside it.
func (d *decider) unsampled(ri int32, from, to int64) bool {
	times := d.in.Ranks[ri].Samples.TimesNs
	i, _ := slices.BinarySearch(times, from)
	return i > 0 && i < len(times) && times[i] > to
}

// accountingOnlyResult is the result of growth bytes that NCCL's reports
// of rank ri show in (from, to) inside its op of marker mi.
func (d *decider) accountingOnlyResult(ri, mi int32, from, to, growth int64) (attribution.Result, bool) {
	if !(accountingOnlyConfidence >= d.cfg.MinConfidence) {
		return attribution.Result{}, false
	}
	accounted := &take(&d.ints, 1)[0]
	*accounted = growth
	return d.unsampledResult(ri, mi, ReasonAccountingOnly, accountingOnlyConfidence, from, to, growth, accounted), true
}

// unsampledResult is the result of a change of rank ri in [from, to]
// inside its op of marker mi that no sample of the rank measured, which
// NCCL's reports (reason says whose) show holding growth bytes:
// collective_confirmed at conf, with no peak sample.
func (d *decider) unsampledResult(ri, mi int32, reason string, conf float64, from, to, growth int64, accounted *int64) attribution.Result {
	rd := &d.in.Ranks[ri]
	mk := &rd.Markers[mi]
	codes := take(&d.codes, 2)
	codes[0], codes[1] = ReasonCollectiveMarker, reason
	markerTimes := take(&d.ints, 1)
	markerTimes[0] = mk.StartNs
	sync := d.m.synchronyOf(mk.Collective)
	ratio := 0.0
	if sync.observed > 0 {
		ratio = float64(sync.synced) / float64(sync.observed)
	}
	return attribution.Result{
		Rank:            rd.Rank,
		IntervalStartNs: from,
		IntervalEndNs:   uint64(to),
		Classification:  attribution.CollectiveConfirmed,
		Confidence:      conf,
		ReasonCodes:     codes,
		Evidence: attribution.Evidence{
			MarkerHits:        int64(markersIn(rd.Markers, d.m.maxDur[ri], from, to)),
			SynchronizedRanks: int64(sync.synced),
			ExpectedWorldSize: d.in.ExpectedWorldSize,
			SynchronyRatio:    roundTo(ratio, 4),
		},
		MarkerTimesNs:      markerTimes,
		Mode:               attribution.ModeEvidence,
		Kind:               attribution.KindTransient,
		ExcessBytes:        growth,
		Collective:         d.collectiveMatch(mk.Collective),
		NCCLAccountedBytes: accounted,
	}
}

// accountingCandidate is a result NCCL's accounting alone makes, with the
// reports that saw the change raised.
type accountingCandidate struct {
	result               attribution.Result
	coll                 int32 // the op's collective
	raisedFrom, raisedTo int64
	// inOp: the first raised report lies inside the op's own interval, or
	// within the match tolerance of it where no other op of the memory
	// manager lies (within the tolerance only, it may be a neighbouring
	// op's: a reduce_scatter ending 20 ms before an all_reduce).
	inOp bool
}

// placeAccountingOnly adds the candidates to results (sorted by rank, then
// start), each beginning after the transient results of its rank before it
// end and ending before those after it begin, as long as it still holds
// its raised reports (else it is dropped: a result of the samples holds
// them). The processor reads a transient that starts inside one it emitted
// as that one grown. cands are in rank order.
func placeAccountingOnly(results []attribution.Result, cands []accountingCandidate) []attribution.Result {
	if len(cands) == 0 {
		return results
	}
	n := len(results)
	rankFrom := n // the first candidate placed of the current rank
	for _, c := range cands {
		r := c.result
		if rankFrom < len(results) && results[rankFrom].Rank != r.Rank {
			rankFrom = len(results)
		}
		placed := true
		clip := func(x *attribution.Result) {
			if x.Kind != attribution.KindTransient || x.IntervalEndNs < uint64(r.IntervalStartNs) || uint64(x.IntervalStartNs) > r.IntervalEndNs {
				return
			}
			switch {
			case x.IntervalEndNs < uint64(c.raisedFrom):
				r.IntervalStartNs = int64(x.IntervalEndNs) + 1
			case x.IntervalStartNs > c.raisedTo:
				r.IntervalEndNs = uint64(x.IntervalStartNs - 1)
			default:
				placed = false
			}
		}
		lo, _ := slices.BinarySearchFunc(results[:n], r.Rank, func(x attribution.Result, rank int64) int { return cmp.Compare(x.Rank, rank) })
		for k := lo; k < n && results[k].Rank == r.Rank && placed; k++ {
			clip(&results[k])
		}
		for k := rankFrom; k < len(results) && placed; k++ {
			clip(&results[k])
		}
		if placed {
			results = append(results, r)
		}
	}
	slices.SortStableFunc(results, func(a, b attribution.Result) int {
		return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.IntervalStartNs, b.IntervalStartNs))
	})
	return results
}
