package evidence

// perOpRun reports whether the run of high samples first..last of a rank
// sampled every interval may be one change per op of a stream of ops of
// one communicator that the rank was polled past (evidence-mode §7.6): its
// first sample lies inside such an op (within the tolerance, as a change
// is matched to it), every later one inside another op of the same
// communicator, within that op's own interval, and no single op holds two
// of its samples. NCCL's buffers of each op live within it, and no sample
// fell between two of the ops to see the memory fall back. A sample outside
// those ops shows memory held between them, and the run stays one change.
// longest is the rank's longest marker (longestOp).
func perOpRun(markers []Marker, colls []Collective, times []int64, first, last int, interval, longest, tol int64) bool {
	if last <= first || len(colls) == 0 {
		return false
	}
	found := false
	polledOps(markers, colls, times[first], interval, tol, tol, func(mi int) bool {
		comm := CanonicalCommID(colls[markers[mi].Collective].CommID)
		prev := markers[mi].Collective
		found = true
		for i := first + 1; i <= last && found; i++ {
			next := NoCollective
			polledOps(markers, colls, times[i], interval, 0, tol, func(mj int) bool {
				c := markers[mj].Collective
				if c != prev && CanonicalCommID(colls[c].CommID) == comm {
					next = c
					return false
				}
				return true
			})
			if next == NoCollective {
				found = false
				break
			}
			found, prev = !oneOpHolds(markers, times[i-1], times[i], longest, tol), next
		}
		return !found
	})
	return found
}

// polledOps calls yield with every marker of a collective with an identity
// and an exact interval that holds time t, its interval widened by within
// on both sides, and that a rank sampled every interval is polled past
// (shorter than the interval less the tolerance tol on both sides), until
// yield returns false.
func polledOps(markers []Marker, colls []Collective, t, interval, within, tol int64, yield func(mi int) bool) {
	end := startingBy(markers, satAdd(t, within))
	from := satSub(satSub(t, within), interval)
	for mi := end - 1; mi >= 0 && markers[mi].StartNs >= from; mi-- {
		mk := &markers[mi]
		if mk.Collective == NoCollective || int(mk.Collective) >= len(colls) || mk.Approximate || mk.EndNs <= mk.StartNs ||
			satAdd(mk.EndNs, within) < t || interval <= satSub(mk.EndNs, mk.StartNs)+2*tol {
			continue
		}
		if !yield(mi) {
			return
		}
	}
}

// oneOpHolds reports whether one marker with an interval, widened by tol,
// holds both a and b (a <= b): a change seen at both may be that op's
// alone. longest is the longest marker's duration.
func oneOpHolds(markers []Marker, a, b, longest, tol int64) bool {
	end := startingBy(markers, satAdd(a, tol))
	from := satSub(satSub(b, tol), longest)
	for mi := end - 1; mi >= 0 && markers[mi].StartNs >= from; mi-- {
		if mk := &markers[mi]; mk.EndNs > mk.StartNs && satAdd(mk.EndNs, tol) >= b {
			return true
		}
	}
	return false
}

// startingBy is the number of markers (sorted by start) that start at or
// before t.
func startingBy(markers []Marker, t int64) int { return firstStartingAt(markers, satAdd(t, 1)) }

// longestOp is the longest duration of markers (0 when none has one).
func longestOp(markers []Marker) int64 {
	var d int64
	for i := range markers {
		d = max(d, markers[i].EndNs-markers[i].StartNs)
	}
	return d
}

// splitPerOp appends run ep to eps, or, where perOpRun holds, one change
// per sample of it: each began after the sample before it and ended before
// the sample after it, its excess that sample's over the baseline.
// longest is the rank's longest marker (longestOp).
func splitPerOp(eps []episode, ep episode, rd *RankData, colls []Collective, base []int64, ra *rankAnalysis, longest, tol int64) []episode {
	times, gaps := rd.Samples.TimesNs, rd.Samples.GapBytes
	if ep.persistent || !perOpRun(rd.Markers, colls, times, ep.first, ep.last, ra.interval, longest, tol) {
		return append(eps, ep)
	}
	for i := ep.first; i <= ep.last; i++ {
		p := ep
		p.first, p.last, p.peak = i, i, i
		p.riseLo, p.riseHi = prevTime(times, i, ra.interval), times[i]
		p.fallLo, p.fallHi = times[i], nextTime(times, i, ra.interval)
		p.excess, p.gap = gaps[i]-base[i], gaps[i]
		p.weak = p.excess < ra.threshold
		p.zscore = float64(p.excess) / ra.sigma
		eps = append(eps, p)
	}
	return eps
}
