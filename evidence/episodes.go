package evidence

import (
	"cmp"
	"math"
	"slices"
)

// episode is one hidden-memory change of a rank: a transient spike (a run of
// samples above the rank's baseline by more than its threshold) or a
// persistent step (the baseline's level rises and stays).
type episode struct {
	rank       int32 // index into Input.Ranks
	persistent bool
	first      int // first high sample (a step: its onset sample)
	last       int // last high sample (a step: the onset sample)
	peak       int // sample of the largest excess (a step: the onset)
	// The change began in (riseLo, riseHi] and (transient) ended in
	// (fallLo, fallHi]: riseHi is the time of sample first, fallLo that
	// of sample last.
	riseLo, riseHi int64
	fallLo, fallHi int64
	excess         int64
	zscore         float64
	// gap is the hidden memory of the peak sample, read here, where the
	// rank's samples are at hand, for the result's peak.
	gap int64
	// weak: the excess reaches only the rank's lower threshold. A weak
	// change is reported only as part of a collective whose members show
	// it too: alone it is within the rank's noise.
	weak bool
	// creep: the baseline under the change moved by more than the weak
	// level across the span without a step (a leak): the excess is over
	// the level the creep had reached.
	creep bool
	// down: a persistent step down (excess < 0), reported only as a
	// communicator's release (evidence-mode §7.1).
	down bool
	// early: a step with fewer than minSamplesBeforeStep samples before it
	// (the rank's first samples). Reported only where a communicator's first
	// use explains it (its members step there too, or NCCL's accounting
	// grew by it): a job's start is full of other level changes.
	early bool
	// stairLast, when > 0, is the last sample of this step's level where it
	// is the lower stair of a staircase (the next step began right after):
	// in memory alone that is also a spike ending onto the next step, so
	// unless a communicator's first use explains it, it is judged as that
	// spike, from first to stairLast.
	stairLast int
}

// rankAnalysis is what the per-rank pass learns about one rank.
type rankAnalysis struct {
	sigma     float64 // robust spread of the hidden memory around the baseline
	threshold int64   // least excess of a spike on its own
	weakLevel int64   // least excess of a spike that members corroborate
	interval  int64   // typical sampling interval
	// flat: the rank's baseline is exactly flat apart from page noise (its
	// robust spread is at the floor), so a change of a few pages on it is
	// no noise.
	flat     bool
	episodes []episode
	// longest is the longest time from a change's first high sample to its
	// last: no change whose first high sample came earlier than that
	// before t holds a sample at t (inChange).
	longest int64
}

// minWeakSpreads is the least excess, in spreads, of a spike that members
// corroborate: noise reaches it in well under one percent of samples, so
// chance alone rarely gives several members such a spike at their marker
// of one collective (the high preset's robust_zscore_threshold of 1.8
// would give a few percent of samples).
const minWeakSpreads = 2.5

// Shares of the samples after a candidate onset that must sit on the new
// level (holdShare) and before it on the old one (priorShare) for a level
// change to count as a step.
const (
	holdShare  = 0.8
	priorShare = 0.5
)

// minBaselineSamples is the least number of samples a baseline span holds
// on each side: a rank polled every few seconds gets a span of that many
// of its intervals instead of BaselineWindowNs.
const minBaselineSamples = 10

// baselineSpan is the span of a rank sampled every interval: the baseline
// window, or minBaselineSamples intervals where that is longer.
func baselineSpan(p *Params, interval int64) int64 {
	return max(p.BaselineWindowNs, satMul(minBaselineSamples, interval))
}

// jumpSamples is how many samples on each side of a level change's onset
// must already sit on the old and the new level: a step is a jump, while
// a leak creeping at MiB/s moves the level by a fraction of its height
// over so few samples (evidence-mode §7.4).
const jumpSamples = 3

// analyzeRank finds a rank's steps and spikes. scratch buffers are reused
// between ranks.
func analyzeRank(idx int32, rd *RankData, colls []Collective, cfg *Config, sc *scratch) rankAnalysis {
	s := &rd.Samples
	n := s.Len()
	var ra rankAnalysis
	if n == 0 || int64(n) < cfg.MinSamplesPerRank {
		return ra
	}
	p := &cfg.Evidence
	times, gaps := s.TimesNs, s.GapBytes
	lv := levelsOf(rd, cfg, sc)
	ra.interval, ra.sigma = lv.interval, lv.sigma
	if rd.Baseline != nil {
		// Last time's memory: nothing holds a rank's episodes once the
		// call that found them returns.
		ra.episodes = rd.Baseline.episodes[:0]
	}
	span, sigma0, steps, cuts := lv.span, lv.sigma0, lv.steps, lv.cuts
	left, right, leftN, rightN, base := lv.left, lv.right, lv.leftN, lv.rightN, lv.base
	k := 2 * cfg.RobustZscoreThreshold
	floor := float64(p.SpreadFloorBytes)
	ra.flat = ra.sigma <= floor
	ra.threshold = max(p.MinExcessBytes, int64(math.Min(k*ra.sigma, math.MaxInt64/2)), 1)
	ra.weakLevel = weakLevelOf(cfg, ra.sigma)

	strongStep := max(p.MinExcessBytes, int64(math.Min(k*sigma0, math.MaxInt64/2)))
	ended := make(map[int]bool)
	for si, st := range steps {
		if st.height <= 0 {
			if !ended[si] {
				i := st.onset
				ra.episodes = append(ra.episodes, episode{
					rank: idx, persistent: true, down: true, first: i, last: i, peak: i,
					riseLo: prevTime(times, i, ra.interval), riseHi: times[i],
					fallLo: times[i], fallHi: times[i], gap: gaps[i],
					excess: st.height, weak: -st.height < strongStep,
					zscore: float64(st.height) / ra.sigma,
				})
			}
			continue
		}
		i := st.onset
		ep := episode{
			rank: idx, persistent: true, first: i, last: i, peak: i,
			riseLo: prevTime(times, cmp.Or(st.hiddenFrom, i), ra.interval), riseHi: times[i],
			fallLo: times[i], fallHi: times[i], gap: gaps[i],
			excess: st.height, early: st.early, stairLast: st.stairLast,
			weak: st.height < strongStep,
		}
		if down, ok := plateauEnd(times, steps, si); ok {
			ended[si+1] = true
			// The level fell back: a bounded episode (another tenant's
			// buffers), judged by its duration like a spike.
			ep.persistent = false
			ep.last = down - 1
			ep.fallLo, ep.fallHi = times[down-1], times[down]
		}
		ep.zscore = float64(st.height) / ra.sigma
		ra.episodes = append(ra.episodes, ep)
	}
	nextCandidate := func(i int) int { return nextAbove(gaps, base, i, ra.weakLevel) }
	if lv.aboveListed {
		above := lv.above
		nextCandidate = func(i int) int {
			for len(above) > 0 && above[0] < i {
				above = above[1:]
			}
			if len(above) == 0 {
				return n
			}
			return above[0]
		}
	}
	// perOpRun reads the rank's longest marker for every run it judges.
	var opLongest int64
	if len(colls) > 0 {
		opLongest = longestOp(rd.Markers)
	}
	c := rd.Baseline
	if c != nil {
		c.beginSpikes(spikeLevels{ra.weakLevel, ra.threshold, ra.sigma}, sc.rebased)
	}
	for i := 0; i < n; {
		if i = nextCandidate(i); i == n {
			break
		}
		if c != nil {
			if ks := c.takeSpike(i); ks != nil {
				ep := shiftEpisode(ks.ep, -c.off)
				ep.rank = idx
				ep.creep = ks.moved && !cutNearTime(times, cuts, ks.peakNs, span)
				ra.episodes = splitPerOp(ra.episodes, ep, rd, colls, base, &ra, opLongest, p.MatchToleranceNs)
				c.keepTaken(ks)
				i = ks.end - c.off + 1
				continue
			}
		}
		j := i
		peak := i
		for j+1 < n && gaps[j+1]-base[j+1] >= ra.weakLevel {
			j++
			if gaps[j]-base[j] > gaps[peak]-base[peak] {
				peak = j
			}
		}
		first, last := i, j
		weak := gaps[peak]-base[peak] < ra.threshold
		if weak && gaps[peak]-surroundings(times, gaps, first, last, max(localSpanNs, localSamples*ra.interval), sc) < ra.weakLevel {
			// Within its rank's noise and not above what lies right around
			// it: the slow baseline lags a leak's bend, this is not a spike.
			i = j + 1
			continue
		}
		if !weak {
			// A strong spike's onset and end are where it clears the full
			// threshold: noise next to it may reach the weak level and
			// would move its onset off the collective's launch.
			for gaps[first]-base[first] < ra.threshold {
				first++
			}
			for gaps[last]-base[last] < ra.threshold {
				last--
			}
		}
		ep := episode{
			rank: idx, first: first, last: last, peak: peak, weak: weak,
			riseLo: prevTime(times, first, ra.interval), riseHi: times[first],
			fallLo: times[last], fallHi: nextTime(times, last, ra.interval),
			excess: gaps[peak] - base[peak], gap: gaps[peak],
		}
		moved := right[peak] - left[peak]
		movedWeak := leftN[peak] > 0 && rightN[peak] > 0 && max(moved, -moved) >= ra.weakLevel
		ep.creep = movedWeak && !cutNear(times, cuts, peak, span)
		ep.zscore = float64(ep.excess) / ra.sigma
		ra.episodes = splitPerOp(ra.episodes, ep, rd, colls, base, &ra, opLongest, p.MatchToleranceNs)
		if c != nil && !weak {
			c.keepSpike(keptSpike{start: i, end: j, ep: ep, peakNs: times[peak], moved: movedWeak})
		}
		i = j + 1
	}
	slices.SortFunc(ra.episodes, func(a, b episode) int { return cmp.Compare(a.riseHi, b.riseHi) })
	for i := range ra.episodes {
		ra.longest = max(ra.longest, ra.episodes[i].fallLo-ra.episodes[i].riseHi)
	}
	if c != nil {
		c.endSpikes()
		c.episodes = ra.episodes
	}
	return ra
}

// rankLevels is what the per-rank pass learns of each sample before it
// looks for episodes: the sides' medians, the steps, the baseline and the
// spreads around them.
type rankLevels struct {
	interval, span int64
	left, right    []int64
	leftN, rightN  []int32
	sigma0         float64 // spread around the medians after each sample
	steps          []step
	cuts           []int // step onsets and session starts: where the baseline is cut
	base           []int64
	sigma          float64 // spread around the baseline
	// above lists the samples whose excess over the baseline reaches the
	// weak level, when aboveListed (a BaselineCache keeps it).
	above       []int
	aboveListed bool
}

// levelsOf computes a rank's levels, with its BaselineCache when it has
// one (the same results, from what changed since its last use).
func levelsOf(rd *RankData, cfg *Config, sc *scratch) rankLevels {
	if rd.Baseline != nil {
		return rd.Baseline.levels(rd, cfg, sc)
	}
	s := &rd.Samples
	n := s.Len()
	p := &cfg.Evidence
	times, gaps := s.TimesNs, s.GapBytes
	floor := float64(p.SpreadFloorBytes)
	var lv rankLevels
	lv.interval = max(typicalInterval(times, sc.ints(n)), 1)
	lv.span = baselineSpan(p, lv.interval)

	// Level steps: the median of the span before each sample against the
	// median of the span after it.
	lv.left, lv.right, lv.leftN, lv.rightN = sc.sideColumns(n)
	sideMedians(times, gaps, lv.span, lv.left, lv.right, lv.leftN, lv.rightN, &sc.window)
	// Steps are found down to the weak level (no size floor: NCCL's buffers
	// at a communicator's first use may be a few pages); those below the
	// strong threshold are reported only when members corroborate them.
	lv.sigma0 = robustSigma(gaps, lv.right, floor, sc.ints(n))
	lv.steps, lv.cuts = findSteps(times, gaps, lv.left, lv.right, lv.leftN, lv.rightN, lv.span, weakStepOf(lv.sigma0), cfg.MinSamplesPerRank)
	if starts := sessionStarts(s); len(starts) > 0 {
		lv.steps, lv.cuts = splitSessions(times, lv.steps, lv.cuts, starts, lv.span)
	}

	// The baseline is the level of the data around each sample, never
	// across a step, so a step neither hides spikes after it nor counts as
	// one.
	lv.base = sc.median(n)
	levelBaseline(times, gaps, lv.left, lv.right, lv.leftN, lv.rightN, lv.span, lv.cuts, nearLevelOf(p, lv.interval), lv.base, sc)
	lv.sigma = robustSigma(gaps, lv.base, floor, sc.ints(n))
	return lv
}

// weakLevelOf is the least excess of a spike that members corroborate. It
// has no size floor: a change the collective's members corroborate is
// NCCL's however few pages it holds (evidence-mode §7.2).
func weakLevelOf(cfg *Config, sigma float64) int64 {
	k := 2 * cfg.RobustZscoreThreshold
	return max(int64(math.Min(max(k/2, minWeakSpreads)*sigma, math.MaxInt64/2)), 1)
}

// weakStepOf is the least height of a step: minWeakSpreads spreads.
func weakStepOf(sigma0 float64) int64 {
	return max(int64(math.Min(minWeakSpreads*sigma0, math.MaxInt64/2)), 1)
}

// nextAbove is the first sample from i on whose excess over base reaches
// level, or len(gaps).
func nextAbove(gaps, base []int64, i int, level int64) int {
	base = base[:len(gaps)]
	for ; i < len(gaps); i++ {
		if gaps[i]-base[i] >= level {
			return i
		}
	}
	return i
}

// cutNear reports whether a step or session start lies within span of
// sample i.
func cutNear(times []int64, cuts []int, i int, span int64) bool {
	return cutNearTime(times, cuts, times[i], span)
}

// cutNearTime reports whether a step or session start lies within span of
// time t.
func cutNearTime(times []int64, cuts []int, t, span int64) bool {
	for _, c := range cuts {
		if d := times[c] - t; d >= -span && d <= span {
			return true
		}
	}
	return false
}

// plateauMaxNs is how long a level may stay raised and still fall back as
// one bounded episode; plateauShare is how closely the fall must match the
// rise (either within this factor of the other).
const (
	plateauMaxNs = 60_000_000_000
	plateauShare = 2
)

// plateauEnd is the onset of the step down that ends the level step si
// raised (the next step, down, within plateauMaxNs and of a height within
// plateauShare of the rise), if there is one.
func plateauEnd(times []int64, steps []step, si int) (int, bool) {
	if si+1 >= len(steps) {
		return 0, false
	}
	up, down := steps[si], steps[si+1]
	fall := -down.height
	if fall <= 0 || fall*plateauShare < up.height || up.height*plateauShare < fall ||
		times[down.onset]-times[up.onset] > plateauMaxNs || down.onset <= up.onset {
		return 0, false
	}
	return down.onset, true
}

// sessionStarts are the indices of the samples that begin a new session
// (a new process of the rank: an elastic restart, a requeue).
func sessionStarts(s *Samples) []int {
	var out []int
	for i := 1; i < len(s.Session); i++ {
		if s.Session[i] != s.Session[i-1] {
			out = append(out, i)
		}
	}
	return out
}

// splitSessions makes each session its own series (evidence-mode §7.1): a
// new process's level is not a step, so steps whose span before the onset
// holds samples of an earlier session are dropped, and every session start cuts
// the baseline.
func splitSessions(times []int64, steps []step, cuts, starts []int, span int64) ([]step, []int) {
	steps = slices.DeleteFunc(steps, func(st step) bool {
		for _, b := range starts {
			if b <= st.onset && b > 0 && times[b-1] > satSub(times[st.onset], span) {
				return true
			}
		}
		return false
	})
	cuts = cuts[:0]
	for _, st := range steps {
		cuts = append(cuts, st.onset)
	}
	cuts = append(cuts, starts...)
	slices.Sort(cuts)
	return steps, slices.Compact(cuts)
}

// A weak change must also stand out of the samples around it, within
// localSpanNs or localSamples sampling intervals of it on each side.
const (
	localSpanNs  = 1_500_000_000
	localSamples = 5
)

// surroundings is the median of the samples within span before first and
// after last (the change's own samples left out), or the lowest int64 when
// there are none.
func surroundings(times, gaps []int64, first, last int, span int64, sc *scratch) int64 {
	vals := sc.ints(0)[:0]
	for k := first - 1; k >= 0 && times[k] >= satSub(times[first], span); k-- {
		vals = append(vals, gaps[k])
	}
	for k := last + 1; k < len(times) && times[k] <= satAdd(times[last], span); k++ {
		vals = append(vals, gaps[k])
	}
	if len(vals) == 0 {
		return math.MinInt64 / 2
	}
	return medianOf(vals)
}

// levelBaseline writes each sample's baseline: the mean of the medians of
// the span before and after it, or of the one side that does not reach
// across a step; when both do (two steps close together), the median of
// the sample's own level within ±span/2. A side is a level only when it
// holds minSamplesBeforeStep samples: near the end of the data the side
// after a sample shrinks to the sample itself, which would be its own
// baseline and hide a change seen by the rank's last poll (evidence-mode
// §7.6). A baseline from the sides is held to the level right around the
// sample (nearLevel).
func levelBaseline(times, gaps, left, right []int64, leftN, rightN []int32, span int64, cuts []int, near nearLevel, out []int64, sc *scratch) {
	levelBaselineOf(0, len(times), times, gaps, left, right, leftN, rightN, span, cuts, near, out, sc)
}

// nearLevel says when a sample's baseline is the level right around it:
// where the level around the sample (levelAround, within span) lies below
// its baseline from the sides by gap bytes or more. A level filling more
// than half of a side's span (another tenant's seconds, too close to a
// second one for either edge to hold a span and count as a step) lifts
// that side's median; a change beside it rises from the level it sits on.
// A leak's creep moves the level around a sample by a few MiB from the
// sides' mean, and keeps it.
type nearLevel struct{ span, gap int64 }

// nearLevelOf is the nearLevel of a rank sampled every interval: its
// surroundings as a weak change's (localSpanNs or localSamples intervals),
// and the size floor on a change judged alone, which noise in a median of
// those few samples does not reach.
func nearLevelOf(p *Params, interval int64) nearLevel {
	return nearLevel{span: max(localSpanNs, satMul(localSamples, interval)), gap: max(p.MinExcessBytes, 1)}
}

// levelBaselineOf is levelBaseline of samples [from, to) only.
func levelBaselineOf(from, to int, times, gaps, left, right []int64, leftN, rightN []int32, span int64, cuts []int, near nearLevel, out []int64, sc *scratch) {
	n := len(times)
	next, _ := slices.BinarySearch(cuts, from+1) // index into cuts of the first cut after i
	for i := from; i < to; i++ {
		for next < len(cuts) && cuts[next] <= i {
			next++
		}
		segStart, segEnd := 0, n
		if next > 0 {
			segStart = cuts[next-1]
		}
		if next < len(cuts) {
			segEnd = cuts[next]
		}
		leftOK := leftN[i] >= minSamplesBeforeStep && (segStart == 0 || times[segStart-1] < satSub(times[i], span))
		rightOK := rightN[i] >= minSamplesBeforeStep && (segEnd == n || times[segEnd] > satAdd(times[i], span))
		switch {
		case leftOK && rightOK:
			out[i] = left[i] + (right[i]-left[i])/2
		case leftOK:
			out[i] = left[i]
		case rightOK:
			out[i] = right[i]
		default:
			vals := sc.ints(n)
			for j := segStart; j < segEnd; j++ {
				if d := times[j] - times[i]; d >= -span/2 && d <= span/2 {
					vals = append(vals, gaps[j])
				}
			}
			out[i] = medianOf(vals)
			continue
		}
		if d := right[i] - left[i]; (leftOK && rightOK && max(d, -d) >= near.gap) || out[i]-gaps[i] >= near.gap {
			if m, spread, ok := levelAround(times, gaps, i, near.span, sc); ok && out[i]-m >= max(near.gap, int64(math.Min(minWeakSpreads*float64(spread), math.MaxInt64/2))) {
				out[i] = m
			}
		}
	}
}

// levelAround is the higher of the medians of the samples within span
// before sample i and after it (i left out): the level i sits on, which a
// change shorter than span does not move, while the edge of a longer level
// moves only the side it lies on. spread is the robust spread of that
// side's samples around it: allocator churn moves a median of so few
// samples by a fraction of it. ok is false when no other sample lies
// within span.
func levelAround(times, gaps []int64, i int, span int64, sc *scratch) (level, spread int64, ok bool) {
	level = math.MinInt64
	vals := sc.ints(0)
	for k := i - 1; k >= 0 && times[k] >= satSub(times[i], span); k-- {
		vals = append(vals, gaps[k])
	}
	if len(vals) > 0 {
		level, spread = medianSpread(vals)
		ok = true
	}
	vals = vals[:0]
	for k := i + 1; k < len(times) && times[k] <= satAdd(times[i], span); k++ {
		vals = append(vals, gaps[k])
	}
	if len(vals) > 0 {
		if m, s := medianSpread(vals); m > level {
			level, spread, ok = m, s, true
		}
	}
	return level, spread, ok
}

// medianSpread is the median of vals (not empty) and their robust spread
// around it, madToSigma times their median absolute deviation; vals is
// overwritten.
func medianSpread(vals []int64) (median, spread int64) {
	median = medianOf(vals)
	for k, v := range vals {
		vals[k] = max(v-median, median-v)
	}
	return median, int64(math.Min(madToSigma*float64(medianOf(vals)), math.MaxInt64/2))
}

func prevTime(times []int64, i int, interval int64) int64 {
	if i > 0 {
		return times[i-1]
	}
	return satSub(times[0], interval)
}

func nextTime(times []int64, i int, interval int64) int64 {
	if i+1 < len(times) {
		return times[i+1]
	}
	return satAdd(times[i], interval)
}

type step struct {
	onset     int
	height    int64 // > 0 up, < 0 down
	early     bool  // fewer than minSamplesBeforeStep samples before it
	stairLast int   // see episode.stairLast
	// hiddenFrom, when > 0, is the first sample of a spike that the step
	// settled after (settle): the level may already have risen under it,
	// so the step began after the sample before hiddenFrom.
	hiddenFrom int
}

// minSamplesBeforeStep is the least number of samples before a step's
// onset for it to stand on its own; from one sample on, a step is an early
// candidate (episode.early): a communicator's first use comes in the first
// step after a model load, with little history before it.
const minSamplesBeforeStep = 3

// findSteps finds level changes of at least threshold: where the median
// of the span after a sample differs from the median of the span before it.
// Around a step that holds for a stretch of samples; the onset is the last
// sample in the stretch where the series crosses to the new level and then
// holds it (holdShare of the next span) while it had not before (under
// priorShare of the previous span): a spike just before the step is not
// its onset. Two steps up closer together than the span (communicators
// connected one after the other) cross that middle once: the samples
// between them, on a level of their own, split the stretch in two steps
// (staircase). It returns the steps, up and down, and their onsets as
// segment starts for the baseline.
func findSteps(times, gaps, left, right []int64, leftN, rightN []int32, span, threshold, minSamples int64) ([]step, []int) {
	f := stepScan{times: times, gaps: gaps, left: left, right: right, leftN: leftN, rightN: rightN,
		span: span, threshold: threshold, minSamples: minSamples}
	f.scan(0, len(times))
	return f.result()
}

// stepScan is findSteps' pass over a rank's samples: runs of samples
// whose sides differ by threshold or more one way, each judged on its
// own. When track is set it lists the runs it judged and the steps each
// gave (BaselineCache keeps them).
type stepScan struct {
	times, gaps, left, right    []int64
	leftN, rightN               []int32
	span, threshold, minSamples int64

	ups   []step // every step, up or down
	track bool
	runs  []stepRun

	// In the scan afterFall makes for a step down at onset fall (> 0),
	// the samples up to fallEnd whose left span reaches back past it read
	// their left side from the fall on: fallLeft[i-fall-1] is the median
	// of gaps[fall:i]. The top-level scan has fall 0.
	fall, fallEnd int
	fallLeft      []int64
}

// stepRun is a run of samples [lo, hi] and its steps ups[s0:s1].
type stepRun struct{ lo, hi, s0, s1 int }

func (f *stepScan) delta(i int) int64 {
	left, leftN := f.leftOf(i)
	if leftN < 1 || int64(f.rightN[i]) < afterNeeded(f.times, i, len(f.times), f.span, f.minSamples) {
		return 0
	}
	return f.right[i] - left
}

// leftOf is the median of sample i's left span and the number of samples
// it holds, as the scan reads them: within a fall's reach, from the fall
// on, and nothing until jumpSamples samples show the level it left.
func (f *stepScan) leftOf(i int) (int64, int32) {
	if f.fall > 0 && i > f.fall && i <= f.fallEnd {
		if i-f.fall < jumpSamples {
			return 0, 0
		}
		return f.fallLeft[i-f.fall-1], int32(i - f.fall)
	}
	return f.left[i], f.leftN[i]
}

// from is the first sample the level before sample j may be read from:
// the onset of the fall the scan judges the samples after, or 0.
func (f *stepScan) from(j int) int {
	if f.fall > 0 && j > f.fall {
		return f.fall
	}
	return 0
}

// scan judges the runs that begin in [i, stop) and returns where the last
// one ended (at least stop).
func (f *stepScan) scan(i, stop int) int {
	// Before full, the span after a sample ends by the last sample, so a
	// step needs minSamples after it (afterNeeded): most samples are
	// judged by their sides alone.
	n := len(f.times)
	full := searchFrom(n, n, func(j int) bool { return f.times[n-1] < satAdd(f.times[j], f.span) })
	for i < stop {
		var d int64
		if i < full {
			if f.leftN[i] >= 1 && int64(f.rightN[i]) >= f.minSamples {
				d = f.right[i] - f.left[i]
			}
		} else {
			d = f.delta(i)
		}
		if d < f.threshold && -d < f.threshold {
			i++
			continue
		}
		i = f.run(i, d)
	}
	return i
}

// result is the steps and their onsets in onset order.
func (f *stepScan) result() ([]step, []int) {
	var cuts []int
	for _, st := range f.ups {
		cuts = append(cuts, st.onset)
	}
	if !slices.IsSorted(cuts) {
		slices.SortFunc(f.ups, func(a, b step) int { return a.onset - b.onset })
		slices.Sort(cuts)
	}
	return f.ups, cuts
}

// run judges the run that begins at i (delta d) and returns the sample
// after it (and after the samples a fall it found reaches).
func (f *stepScan) run(i int, d int64) int {
	s0 := len(f.ups)
	hi := f.judge(i, d)
	if f.track {
		f.runs = append(f.runs, stepRun{lo: i, hi: hi, s0: s0, s1: len(f.ups)})
	}
	return hi + 1
}

// judge finds the steps of the run that begins at i (delta d) and returns
// its last sample, or the last sample afterFall judged when it found a
// fall.
func (f *stepScan) judge(i int, d int64) int {
	times, gaps, right := f.times, f.gaps, f.right
	span, threshold, minSamples := f.span, f.threshold, f.minSamples
	n := len(times)
	up := d > 0
	lo, hi := i, i
	before, _ := f.leftOf(i)
	height := d
	for hi+1 < n {
		d2 := f.delta(hi + 1)
		if (up && d2 < threshold) || (!up && -d2 < threshold) {
			break
		}
		hi++
		if (up && d2 > height) || (!up && d2 < height) {
			before, _ = f.leftOf(hi)
			height = d2
		}
	}
	mid := before + height/2
	var found []int // onsets of the steps found in this run
	fall := -1
	for j := hi; j >= lo; j-- {
		from := f.from(j)
		if !crosses(gaps, j, mid, up) || !holds(times, gaps, j, from, n, mid, up, span, minSamples) {
			continue
		}
		if !up {
			// A fall needs minSamplesBeforeStep samples on the level it
			// leaves: a rank's first poll alone above the rest shows a
			// change that rose before the data began, a spike as likely
			// as a level (evidence-mode §7.6).
			if !jumps(gaps, j, from, height) || countBefore(times, j, from, span) < minSamplesBeforeStep {
				continue
			}
			f.ups = append(f.ups, step{onset: j, height: height})
			found = append(found, j)
			fall = j
			break
		}
		// The stairs of a staircase are each a jump of their own, not
		// one of the whole height.
		settled := settle(times, gaps, j, before+height, mid, span, threshold)
		stairs := staircase(times, gaps, right, settled, from, before, height, span, threshold)
		if len(stairs) == 1 && !jumps(gaps, j, from, height) {
			continue
		}
		for _, st := range stairs {
			if st.onset == settled && settled != j {
				st.hiddenFrom = j
			}
			st.early = countBefore(times, st.onset, f.from(st.onset), span) < minSamplesBeforeStep
			f.ups = append(f.ups, st)
			found = append(found, st.onset)
		}
		break
	}
	// Two steps within a span of each other (a world communicator's
	// first use, then a group's) make one run: each further jump of
	// its own, clear of those found, is a step too (evidence-mode §7.2).
	// It must hold its own level up to the next step found: a spike
	// before a step, back on the old level in between, does not hold
	// just because the next step's level follows within the span. The
	// samples after a fall are afterFall's.
	last := hi
	if fall >= 0 {
		last = fall - 1
	}
	for j := lo; j <= last; j++ {
		if slices.ContainsFunc(found, func(o int) bool { return j > o-2*jumpSamples && j < o+2*jumpSamples }) {
			continue
		}
		from := f.from(j)
		h, ok := localJump(gaps, j, from)
		if !ok || (up && h < threshold) || (!up && -h < threshold) {
			continue
		}
		next := n
		for _, o := range found {
			if o > j && o < next {
				next = o
			}
		}
		m := gaps[j-1] + h/2
		if crosses(gaps, j, m, up) && holds(times, gaps, j, from, next, m, up, span, minSamples) {
			f.ups = append(f.ups, step{onset: j, height: h})
			j += 2 * jumpSamples
		}
	}
	if fall < 0 {
		return hi
	}
	return max(hi, f.afterFall(fall))
}

// afterFall judges the samples after a step down at onset fo whose left
// span reaches back past it, reading their left side from fo on, and
// returns the last sample it judged. Memory freed is gone: the fall ended
// the level before it, so a change after it is judged against the level it
// left. A restarted rank's new process starts with the dead one's memory
// still on the device; freed a few seconds later, then the re-created
// communicator's first use a second or two after that: read against spans
// reaching back over the dead process's memory, that step is a fall
// (evidence-mode §7.1).
func (f *stepScan) afterFall(fo int) int {
	times, n := f.times, len(f.times)
	end := fo
	for end+1 < n && times[fo-1] >= satSub(times[end+1], f.span) {
		end++
	}
	if end == fo {
		return fo
	}
	var w windowMedian
	left := make([]int64, end-fo)
	for i := fo + 1; i <= end; i++ {
		w.add(f.gaps[i-1])
		left[i-fo-1] = w.median()
	}
	// in is the scan within this fall's reach: the same samples, their
	// left sides read from the fall on; the steps it finds are f's.
	in := *f
	in.fall, in.fallEnd, in.fallLeft = fo, end, left
	last := end
	for i := fo + 1; i <= end; {
		d := in.delta(i)
		if d < in.threshold && -d < in.threshold {
			i++
			continue
		}
		hi := in.judge(i, d)
		last = max(last, hi)
		i = hi + 1
	}
	f.ups = in.ups
	return last
}

// afterNeeded is how many samples from j on a level change needs to count
// as a step: minSamples, or, where the rank's data ends within span of j,
// every sample to its end, at least jumpSamples. A rank polled every few
// seconds (DCGM, nvidia-smi at 0.2 Hz) whose job ends on the new level a
// few polls after the onset has no more samples to give, and at 10 Hz this
// is the last fraction of a second (evidence-mode §7.6).
func afterNeeded(times []int64, j, n int, span, minSamples int64) int64 {
	if times[n-1] >= satAdd(times[j], span) {
		return minSamples
	}
	return min(minSamples, max(jumpSamples, int64(n-j)))
}

// localJump is the median of the jumpSamples samples from j less that of
// the jumpSamples before j; ok is false too near either end (or sample
// from, before which the level is not read).
func localJump(gaps []int64, j, from int) (int64, bool) {
	if j-from < jumpSamples || j+jumpSamples > len(gaps) {
		return 0, false
	}
	var a, b [jumpSamples]int64
	copy(a[:], gaps[j-jumpSamples:j])
	copy(b[:], gaps[j:j+jumpSamples])
	return medianOf(b[:]) - medianOf(a[:]), true
}

// jumps reports whether the median of the jumpSamples samples from j lies
// at least half of height (> 0 up, < 0 down) past the old level: the median
// of the jumpSamples before j, or of the jumpSamples before those when it
// is nearer the old level (a spike just before the step). Nothing before
// sample from is read.
func jumps(gaps []int64, j, from int, height int64) bool {
	if j-from < jumpSamples || j+jumpSamples > len(gaps) {
		return true // too close to an end to tell: holds has judged it
	}
	var a, b [jumpSamples]int64
	copy(a[:], gaps[j-jumpSamples:j])
	copy(b[:], gaps[j:j+jumpSamples])
	before, after := medianOf(a[:]), medianOf(b[:])
	if j-from >= 2*jumpSamples {
		copy(a[:], gaps[j-2*jumpSamples:j-jumpSamples])
		if earlier := medianOf(a[:]); (height > 0) == (earlier < before) {
			before = earlier
		}
	}
	if height > 0 {
		return after-before >= height/2
	}
	return after-before <= height/2
}

// staircase splits a step up of height from level before, found at onset
// j, where a run of samples next to j sits on a level between the two, at
// least threshold from each: an earlier step where the run begins, a later
// one where it ends (at j, or past j when j itself sits on the run's level,
// crossed where the stair lies at the middle of the whole step). Runs are
// looked for within span of j; the later step rises from the run's level
// to the level after it
// (right, the median of the span after each sample). No stair begins at
// or before sample from.
func staircase(times, gaps, right []int64, j, from int, before, height, span, threshold int64) []step {
	after := before + height
	// A stair is a level of its own: apart from each side by the step
	// threshold and by an eighth of the whole step, not noise on a ramp.
	apart := max(threshold, height/8)
	between := func(k int) bool { return gaps[k] >= before+apart && gaps[k] <= after-apart }
	k := j
	for k > from && between(k-1) && times[k-1] >= satSub(times[j], span) {
		k--
	}
	m := j
	for m < len(gaps) && between(m) && times[m] <= satAdd(times[j], span) {
		m++
	}
	upper := m > j && m < len(gaps) && gaps[m] > after-threshold
	lo := j // where the run on the level between begins
	switch {
	case k < j && k > from:
		// A stair at the middle of the whole step (a 1 GiB collective's
		// spike ending as a 2 GiB step begins, no sample between) is
		// crossed on its own samples: the later stair begins where the
		// run ends past j, or at j where the run ends there.
		lo = k
		if !upper {
			m = j
		}
	case !upper:
		return []step{{onset: j, height: height}}
	}
	level := medianOf(slices.Clone(gaps[lo:m]))
	return []step{{onset: lo, height: level - before, stairLast: m - 1}, {onset: m, height: right[m] - level}}
}

// settle moves the onset j of a step up to after to where the series
// settles on that level, when it first rises well above it (by threshold or
// more): a spike that ends onto the new level (a collective's spike just
// before the next step's first use of a communicator, with no sample
// between at a sparse rate) is a change of its own, and the step is found
// where the spike ends. The level may as well have risen under the spike
// (a step at a first use, then a spike at the next op, both in one poll
// interval): the step's rise gap reaches back to the sample before j
// (step.hiddenFrom). It stays at j when the series does not come down
// onto the level within span.
func settle(times, gaps []int64, j int, after, mid, span, threshold int64) int {
	if gaps[j] < after+threshold {
		return j
	}
	for k := j + 1; k < len(gaps) && times[k] <= satAdd(times[j], span); k++ {
		if gaps[k] < after+threshold {
			if gaps[k] >= mid {
				return k
			}
			return j
		}
	}
	return j
}

// countBefore is the number of samples in (t_j - span, t_j) from sample
// from on.
func countBefore(times []int64, j, from int, span int64) int {
	start := satSub(times[j], span)
	c := 0
	for k := j - 1; k >= from && times[k] > start; k-- {
		c++
	}
	return c
}

// crosses reports whether sample j is on the new level and j-1 was not.
func crosses(gaps []int64, j int, mid int64, up bool) bool {
	on := func(k int) bool {
		if up {
			return gaps[k] >= mid
		}
		return gaps[k] <= mid
	}
	return on(j) && (j == 0 || !on(j-1))
}

// holds reports whether the series sits on the new level after j (holdShare
// of the samples in [t_j, t_j+span] before sample limit) and was mostly off
// it before (under priorShare of (t_j-span, t_j)), with at least minSamples
// samples after (all those before limit, when fewer) and one before. The
// samples before sample from are not read.
func holds(times, gaps []int64, j, from, limit int, mid int64, up bool, span, minSamples int64) bool {
	on := func(k int) bool {
		if up {
			return gaps[k] >= mid
		}
		return gaps[k] <= mid
	}
	var after, afterOn, before, beforeOn int64
	end := satAdd(times[j], span)
	for k := j; k < limit && times[k] <= end; k++ {
		after++
		if on(k) {
			afterOn++
		}
	}
	start := satSub(times[j], span)
	for k := j - 1; k >= from && times[k] > start; k-- {
		before++
		if on(k) {
			beforeOn++
		}
	}
	if limit < len(times) {
		minSamples = min(minSamples, int64(limit-j))
	} else {
		minSamples = afterNeeded(times, j, len(times), span, minSamples)
	}
	if after < minSamples || before < 1 {
		return false
	}
	return float64(afterOn) >= holdShare*float64(after) && float64(beforeOn) < priorShare*float64(before)
}
