package evidence

import "slices"

// accountingLookbackNs is how far before a change NCCL's reported memory
// is read for its level before the change: long enough to hold a few
// reports at the usual cadences (100 ms to 1 s), short enough that an
// earlier change of the same communicator has ended.
const accountingLookbackNs = 2_000_000_000

// persistentAccountingSpanNs is how long after a step's onset NCCL's
// accounting is read for the raised level.
const persistentAccountingSpanNs = 1_000_000_000

// accountingMissLimit is the largest probability that every report missed a
// change of NCCL's at which the reports' silence denies it (evidence-mode
// §2.3): one true collective change in a hundred could be denied by chance.
const accountingMissLimit = 0.01

// heldMinSamples is the least number of samples a change spans for NCCL's
// accounting to have to stay raised throughout it.
const heldMinSamples = 3

// accountingVerdict is what NCCL's accounting says about one change.
type accountingVerdict struct {
	present   bool  // the rank reports NCCL accounting at all
	untracked bool  // ... but its totals do not follow NCCL's buffers
	growth    int64 // summed growth of the rank's memory managers over the change
	// miss is the probability that no report of the rank shows the change
	// if it were NCCL's: 0 when a report lies where the samples saw it, 1
	// when none lies where it could have been.
	miss float64
}

// rankAccounting is what a rank's accounting series say as a whole.
type rankAccounting struct {
	done    bool
	tracked bool
	manager []int // AccountingManagers of the series
}

// rankAccounting is what rank ri's accounting series say as a whole,
// read once per evaluation.
func (m *matcher) rankAccounting(ri int32) *rankAccounting {
	ra := &m.acct[ri]
	if !ra.done {
		series := m.in.Ranks[ri].Accounting
		ra.done, ra.tracked = true, AccountingTracked(series)
		if ra.tracked {
			ra.manager = AccountingManagers(series)
		}
	}
	return ra
}

// accountingOf sums, over the rank's memory managers (one series each), the
// growth of NCCL's memory over the change: the least report in [riseHi,
// fallLo] when the change spans heldMinSamples samples or more (else, or with
// none there, the largest in (riseLo, fallHi]) above the least report of the
// lookback before it (for a communicator that had not reported yet: 0, as
// created there, for a step); a transient change leaves NCCL's total where
// it was, so its level is the higher of that and the least report of the
// lookback after it (a step that stays is no transient's growth). The
// change was surely under way in [riseHi, fallLo] and could have
// been anywhere in (riseLo, fallHi]: with its onset uniform in the first gap
// and its end in the last, a report at t in the rise gap shows it with
// probability (t-riseLo)/(riseHi-riseLo), one in the fall gap with
// (fallHi-t)/(fallHi-fallLo); the reports of one series miss it only when the
// onset came after the last of the rise gap and the end before the first of
// the fall gap. A change of NCCL's is on one manager: the miss is that of the
// collective's communicator's series when comm names one, else the largest.
// NCCL allocates a collective's buffers when the op begins and holds them
// until it ends: a marker mk, when given, narrows the rise gap to its
// launch (within the match tolerance; an approximate marker's to its
// interval) and the fall gap to after the op's end (unless the samples say
// the change ended before it), so a report after the launch and before the
// first sample of the change, or after the last one and before the op's
// end, sees a change of NCCL's surely.
func (m *matcher) accountingOf(ri int32, ep *episode, comm string, mk *Marker) accountingVerdict {
	rd := &m.in.Ranks[ri]
	var v accountingVerdict
	if len(rd.Accounting) == 0 {
		return v
	}
	v.present = true
	ra := m.rankAccounting(ri)
	if !ra.tracked {
		v.untracked = true
		return v
	}
	from, to := ep.riseLo, ep.fallHi
	sureFrom, sureTo := ep.riseHi, ep.fallLo
	if ep.persistent {
		to = satAdd(ep.riseHi, persistentAccountingSpanNs)
		sureTo = to
	}
	onsetFrom, onsetTo := from, sureFrom // where a change of NCCL's began
	endFrom := sureTo                    // and after which it ended
	grownFrom, grownTo := from, to       // the reports that can show its growth
	if mk != nil {
		tol := m.tolerance(mk)
		onsetFrom = max(from, satSub(mk.StartNs, tol.before))
		if !ep.persistent && !mk.Approximate && mk.Collective != NoCollective {
			// A change of NCCL's lives within its op, unless the samples
			// saw it go on after: another report's growth is another
			// op's (the possible window of a change seen at 1 Hz spans
			// the ops around it). High samples inside other ops of the
			// communicator may be their changes, merged by the sampling.
			opsFrom, opsTo := m.opsWithChange(ri, mk, ep, tol)
			grownFrom, grownTo = max(from, opsFrom), min(to, max(sureTo, opsTo))
		}
		// NCCL allocates an op's buffers when the op begins: a change of
		// NCCL's began at the launch, within the tolerance, as a member's
		// is judged (memberAccounting); an approximate marker's launch is
		// known only to within its interval.
		launched := satAdd(mk.StartNs, tol.after)
		if mk.Approximate {
			launched = satAdd(mk.EndNs, tol.after)
		}
		onsetTo = max(onsetFrom+1, min(sureFrom, launched))
		if opEnd := satSub(mk.EndNs, m.cfg.Evidence.MatchToleranceNs); !ep.persistent && !mk.Approximate && opEnd > sureTo && opEnd < to {
			endFrom = opEnd
		}
	}
	named := -1
	if comm != "" {
		named = managerOf(rd.Accounting, ra.manager, comm)
	}
	for i := range rd.Accounting {
		if ra.manager[i] != i {
			continue // counted with the series of its manager
		}
		a := &rd.Accounting[i]
		lo, _ := slices.BinarySearch(a.TimesNs, satSub(from, accountingLookbackNs))
		pre, havePre := int64(0), false
		j := lo
		for ; j < len(a.TimesNs) && a.TimesNs[j] <= from; j++ {
			if !havePre || a.Bytes[j] < pre {
				pre, havePre = a.Bytes[j], true
			}
		}
		if !havePre && lo > 0 {
			pre, havePre = a.Bytes[lo-1], true
		}
		if !ep.persistent {
			// A transient change of NCCL's leaves its total where it was:
			// its level is the higher of the least reports before and
			// after it. A step that stays (a communicator connecting its
			// buffers at its first use inside the lookback) is no
			// transient's growth, and reports that begin within the
			// change hold their level after it.
			k, _ := slices.BinarySearch(a.TimesNs, to+1)
			post, havePost := int64(0), false
			for ; k < len(a.TimesNs) && a.TimesNs[k] <= satAdd(to, accountingLookbackNs); k++ {
				if !havePost || a.Bytes[k] < post {
					post, havePost = a.Bytes[k], true
				}
			}
			if havePost && (!havePre || post > pre) {
				pre, havePre = post, true
			}
		}
		peak, havePeak := int64(0), false
		held, haveHeld := int64(0), false
		riseMiss, fallMiss, sure := 1.0, 1.0, false
		for ; j < len(a.TimesNs) && a.TimesNs[j] <= to; j++ {
			t := a.TimesNs[j]
			if (!havePeak || a.Bytes[j] > peak) && t >= grownFrom && t <= grownTo {
				peak, havePeak = a.Bytes[j], true
			}
			switch {
			case t < onsetFrom:
			case t < onsetTo:
				riseMiss = float64(onsetTo-t) / float64(onsetTo-onsetFrom)
			case t <= endFrom:
				if m.betweenOps(ri, mk, ep, t) {
					continue
				}
				sure = true
				// Held only where the samples saw the change: past them
				// it lasts only by the op's hypothesis.
				if t >= ep.riseHi && t <= ep.fallLo && (!haveHeld || a.Bytes[j] < held) {
					held, haveHeld = a.Bytes[j], true
				}
			case t > grownTo:
				// Past where the op's change of NCCL's could have lived.
			case fallMiss == 1:
				fallMiss = float64(t-endFrom) / float64(grownTo-endFrom)
			}
		}
		if haveHeld && ep.last-ep.first+1 >= heldMinSamples {
			// NCCL's memory must have stayed raised while the change surely
			// was: a long change (another tenant's seconds) is not covered
			// by a collective's growth and fall inside it. Two high samples
			// a poll apart may be two spikes, so this needs a few.
			peak = held
		}
		if havePeak && peak > pre {
			v.growth = satAdd(v.growth, peak-pre)
		}
		miss := riseMiss * fallMiss
		if sure {
			miss = 0
		}
		if named < 0 || named == i {
			v.miss = max(v.miss, miss)
		}
	}
	return v
}

// covers reports whether NCCL's growth accounts for the change's excess,
// up to the rank's spike threshold or a quarter of the excess (reports and
// samples are taken at different instants of a moving level).
func (v accountingVerdict) covers(ep *episode, threshold int64) bool {
	allowance := max(threshold, ep.excess/4)
	return v.growth > 0 && v.growth >= ep.excess-allowance
}

// betweenOps reports whether a report at t, after op mk ended and between
// change ep's high samples, may fall between two changes of NCCL's on mk's
// communicator: every high sample after t lies inside an op of that
// communicator on the rank launched after t (its own interval: a sample
// there can be that op's change), so NCCL's memory may have fallen back at
// t. Such a report neither shows nor misses the change. A high sample
// outside those ops (a continuous change, or one that outlasts a dense
// stream of short ops) keeps the report.
func (m *matcher) betweenOps(ri int32, mk *Marker, ep *episode, t int64) bool {
	if mk == nil || mk.Collective == NoCollective || ep.persistent || t <= mk.EndNs || t < ep.riseHi {
		return false
	}
	comm := m.in.Collectives[mk.Collective].CommID
	rd := &m.in.Ranks[ri]
	markers := rd.Markers
	first := firstStartingAt(markers, t+1)
	later := false
	for k := ep.first; k <= ep.last; k++ {
		s := rd.Samples.TimesNs[k]
		if s <= t {
			continue
		}
		inside := false
		for i := first; i < len(markers) && markers[i].StartNs <= s && !inside; i++ {
			c := markers[i].Collective
			inside = markers[i].EndNs >= s && c != NoCollective && m.in.Collectives[c].CommID == comm
		}
		if !inside {
			return false
		}
		later = true
	}
	return later
}

// opsWithChange is the span of rank ri's ops of mk's communicator, mk
// included, whose interval widened by tol holds a high sample of change
// ep.
func (m *matcher) opsWithChange(ri int32, mk *Marker, ep *episode, tol widening) (from, to int64) {
	from, to = satSub(mk.StartNs, tol.before), satAdd(mk.EndNs, tol.after)
	comm := m.in.Collectives[mk.Collective].CommID
	rd := &m.in.Ranks[ri]
	markers := rd.Markers
	for k := ep.first; k <= ep.last; k++ {
		s := rd.Samples.TimesNs[k]
		if s >= from && s <= to {
			continue
		}
		i := firstStartingAt(markers, satSub(s, satAdd(m.maxDur[ri], tol.after)))
		for ; i < len(markers) && markers[i].StartNs <= satAdd(s, tol.before); i++ {
			x := &markers[i]
			if x.Collective == NoCollective || x.Approximate || m.in.Collectives[x.Collective].CommID != comm ||
				s < satSub(x.StartNs, tol.before) || s > satAdd(x.EndNs, tol.after) {
				continue
			}
			from, to = min(from, satSub(x.StartNs, tol.before)), max(to, satAdd(x.EndNs, tol.after))
		}
	}
	return from, to
}
