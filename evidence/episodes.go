package evidence

import (
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
	// (fallLo, fallHi].
	riseLo, riseHi int64
	fallLo, fallHi int64
	excess         int64
	zscore         float64
	// weak: the excess reaches only the rank's lower threshold. A weak
	// change is reported only as part of a collective whose members show
	// it too: alone it is within the rank's noise.
	weak bool
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
	episodes  []episode
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

// analyzeRank finds a rank's steps and spikes. scratch buffers are reused
// between ranks.
func analyzeRank(idx int32, rd *RankData, cfg *Config, sc *scratch) rankAnalysis {
	s := &rd.Samples
	n := s.Len()
	var ra rankAnalysis
	if n == 0 || int64(n) < cfg.MinSamplesPerRank {
		return ra
	}
	p := &cfg.Evidence
	times, gaps := s.TimesNs, s.GapBytes
	ra.interval = typicalInterval(times, sc.ints(n))
	if ra.interval <= 0 {
		ra.interval = 1
	}
	span := p.BaselineWindowNs
	k := 2 * cfg.RobustZscoreThreshold
	floor := float64(p.SpreadFloorBytes)

	// Level steps: the median of the span before each sample against the
	// median of the span after it.
	var left, right []int64
	var leftN, rightN []int32
	if rd.Baseline != nil {
		left, right, leftN, rightN = rd.Baseline.sides(times, gaps, span, &sc.window, &sc.sides)
	} else {
		left, right, leftN, rightN = sc.sideColumns(n)
		sideMedians(times, gaps, span, left, right, leftN, rightN, &sc.window)
	}
	sigma0 := robustSigma(gaps, right, floor, sc.ints(n))
	stepThreshold := max(p.MinExcessBytes, int64(math.Min(k*sigma0, math.MaxInt64/2)))
	steps, cuts := findSteps(times, gaps, left, right, leftN, rightN, span, stepThreshold, cfg.MinSamplesPerRank)

	// The baseline is the level of the data around each sample, never
	// across a step, so a step neither hides spikes after it nor counts as
	// one.
	base := sc.median(n)
	levelBaseline(times, gaps, left, right, leftN, rightN, span, cuts, base, sc)
	ra.sigma = robustSigma(gaps, base, floor, sc.ints(n))
	ra.threshold = max(p.MinExcessBytes, int64(math.Min(k*ra.sigma, math.MaxInt64/2)), 1)
	ra.weakLevel = max(p.MinExcessBytes, int64(math.Min(max(k/2, minWeakSpreads)*ra.sigma, math.MaxInt64/2)), 1)

	for _, st := range steps {
		i := st.onset
		ep := episode{
			rank: idx, persistent: true, first: i, last: i, peak: i,
			riseLo: prevTime(times, i, ra.interval), riseHi: times[i],
			fallLo: times[i], fallHi: times[i],
			excess: st.height, early: st.early, stairLast: st.stairLast,
		}
		ep.zscore = float64(st.height) / ra.sigma
		ra.episodes = append(ra.episodes, ep)
	}
	for i := 0; i < n; {
		if gaps[i]-base[i] < ra.weakLevel {
			i++
			continue
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
			excess: gaps[peak] - base[peak],
		}
		ep.zscore = float64(ep.excess) / ra.sigma
		ra.episodes = append(ra.episodes, ep)
		i = j + 1
	}
	slices.SortFunc(ra.episodes, func(a, b episode) int {
		switch {
		case a.riseHi < b.riseHi:
			return -1
		case a.riseHi > b.riseHi:
			return 1
		}
		return 0
	})
	return ra
}

// levelBaseline writes each sample's baseline: the mean of the medians of
// the span before and after it, or of the one side that does not reach
// across a step; when both do (two steps close together), the median of
// the sample's own level within ±span/2.
func levelBaseline(times, gaps, left, right []int64, leftN, rightN []int32, span int64, cuts []int, out []int64, sc *scratch) {
	n := len(times)
	next := 0 // index into cuts of the first cut after i
	for i := 0; i < n; i++ {
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
		rightOK := rightN[i] > 0 && (segEnd == n || times[segEnd] > satAdd(times[i], span))
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
		}
	}
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
// (staircase). It returns the steps up (persistent episodes) and the cuts
// of every step, up or down, as segment starts for the baseline.
func findSteps(times, gaps, left, right []int64, leftN, rightN []int32, span, threshold, minSamples int64) ([]step, []int) {
	n := len(times)
	var ups []step
	var cuts []int
	delta := func(i int) int64 {
		if leftN[i] < 1 || int64(rightN[i]) < minSamples {
			return 0
		}
		return right[i] - left[i]
	}
	for i := 0; i < n; {
		d := delta(i)
		if d < threshold && -d < threshold {
			i++
			continue
		}
		up := d > 0
		lo, hi := i, i
		before, height := left[i], d
		for hi+1 < n {
			d2 := delta(hi + 1)
			if (up && d2 < threshold) || (!up && -d2 < threshold) {
				break
			}
			hi++
			if (up && d2 > height) || (!up && d2 < height) {
				before, height = left[hi], d2
			}
		}
		mid := before + height/2
		for j := hi; j >= lo; j-- {
			if !crosses(gaps, j, mid, up) || !holds(times, gaps, j, mid, up, span, minSamples) {
				continue
			}
			if !up {
				cuts = append(cuts, j)
				break
			}
			j = settle(times, gaps, j, before+height, mid, span, threshold)
			for _, st := range staircase(times, gaps, right, j, before, height, span, threshold) {
				st.early = countBefore(times, st.onset, span) < minSamplesBeforeStep
				cuts = append(cuts, st.onset)
				ups = append(ups, st)
			}
			break
		}
		i = hi + 1
	}
	return ups, cuts
}

// staircase splits a step up of height from level before, found at onset
// j, where a run of samples next to j sits on a level between the two, at
// least threshold from each: an earlier step where the run ends at j, a
// later one where it begins there. Runs are looked for within span of j;
// the later step rises from the run's level to the level after it
// (right, the median of the span after each sample).
func staircase(times, gaps, right []int64, j int, before, height, span, threshold int64) []step {
	after := before + height
	between := func(k int) bool { return gaps[k] >= before+threshold && gaps[k] <= after-threshold }
	k := j
	for k > 0 && between(k-1) && times[k-1] >= satSub(times[j], span) {
		k--
	}
	if k < j && k > 0 {
		level := medianOf(slices.Clone(gaps[k:j]))
		return []step{{onset: k, height: level - before, stairLast: j - 1}, {onset: j, height: right[j] - level}}
	}
	m := j
	for m < len(gaps) && between(m) && times[m] <= satAdd(times[j], span) {
		m++
	}
	if m > j && m < len(gaps) && gaps[m] > after-threshold {
		level := medianOf(slices.Clone(gaps[j:m]))
		return []step{{onset: j, height: level - before, stairLast: m - 1}, {onset: m, height: right[m] - level}}
	}
	return []step{{onset: j, height: height}}
}

// settle moves the onset j of a step up to after to where the series
// settles on that level, when it first rises well above it (by threshold or
// more): a spike that ends onto the new level (a collective's spike just
// before the next step's first use of a communicator, with no sample
// between at a sparse rate) is a change of its own, and the step begins
// where the spike ends. It stays at j when the series does not come down
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

// countBefore is the number of samples in (t_j - span, t_j).
func countBefore(times []int64, j int, span int64) int {
	start := satSub(times[j], span)
	c := 0
	for k := j - 1; k >= 0 && times[k] > start; k-- {
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
// of the samples in [t_j, t_j+span]) and was mostly off it before (under
// priorShare of (t_j-span, t_j)), with at least minSamples samples after
// and one before.
func holds(times, gaps []int64, j int, mid int64, up bool, span, minSamples int64) bool {
	on := func(k int) bool {
		if up {
			return gaps[k] >= mid
		}
		return gaps[k] <= mid
	}
	var after, afterOn, before, beforeOn int64
	end := satAdd(times[j], span)
	for k := j; k < len(times) && times[k] <= end; k++ {
		after++
		if on(k) {
			afterOn++
		}
	}
	start := satSub(times[j], span)
	for k := j - 1; k >= 0 && times[k] > start; k-- {
		before++
		if on(k) {
			beforeOn++
		}
	}
	if after < minSamples || before < 1 {
		return false
	}
	return float64(afterOn) >= holdShare*float64(after) && float64(beforeOn) < priorShare*float64(before)
}
