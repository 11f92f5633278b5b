package evidence

import "slices"

// accountingLookbackNs is how far before a change NCCL's reported memory
// is read for its level before the change: long enough to hold a few
// reports at the usual cadence (100 ms), short enough that an earlier
// change of the same communicator has ended.
const accountingLookbackNs = 2_000_000_000

// persistentAccountingSpanNs is how long after a step's onset NCCL's
// accounting is read for the raised level.
const persistentAccountingSpanNs = 1_000_000_000

// heldMinSamples is the least number of samples a change spans for NCCL's
// accounting to have to stay raised throughout it.
const heldMinSamples = 3

// accountingVerdict is what NCCL's accounting says about one change.
type accountingVerdict struct {
	present bool  // the rank reports NCCL accounting at all
	growth  int64 // summed growth of the rank's communicators over the change
	sampled bool  // a report lies where the change was surely under way
}

// accountingOf sums, over the rank's communicators, the growth of NCCL's
// memory over the change: the least report in [riseHi, fallLo] when the
// change spans heldMinSamples samples or more (else, or with none there,
// the largest in (riseLo, fallHi]) above the least report of
// the lookback before it (0 for a communicator that had not reported yet:
// it did not exist). The change
// was surely under way in [riseHi, fallLo].
func accountingOf(rd *RankData, ep *episode) accountingVerdict {
	var v accountingVerdict
	if len(rd.Accounting) == 0 {
		return v
	}
	v.present = true
	from, to := ep.riseLo, ep.fallHi
	sureFrom, sureTo := ep.riseHi, ep.fallLo
	if ep.persistent {
		to = satAdd(ep.riseHi, persistentAccountingSpanNs)
		sureTo = to
	}
	for i := range rd.Accounting {
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
		peak, havePeak := int64(0), false
		held, haveHeld := int64(0), false
		for ; j < len(a.TimesNs) && a.TimesNs[j] <= to; j++ {
			if !havePeak || a.Bytes[j] > peak {
				peak, havePeak = a.Bytes[j], true
			}
			if a.TimesNs[j] >= sureFrom && a.TimesNs[j] <= sureTo {
				v.sampled = true
				if !haveHeld || a.Bytes[j] < held {
					held, haveHeld = a.Bytes[j], true
				}
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
