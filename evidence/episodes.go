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
}

// rankAnalysis is what the per-rank pass learns about one rank.
type rankAnalysis struct {
	sigma     float64 // robust spread of the hidden memory around the baseline
	threshold int64   // least excess of a spike
	interval  int64   // typical sampling interval
	episodes  []episode
}

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
	half := p.BaselineWindowNs
	k := 2 * cfg.RobustZscoreThreshold
	floor := float64(p.SpreadFloorBytes)

	// Pass 1: a running median over the whole series shows level steps;
	// the median before and after each sample compares the two levels.
	med := sc.median(n)
	runningMedian(times, gaps, half, nil, med, &sc.window)
	sigma0 := robustSigma(gaps, med, floor, sc.ints(n))
	stepThreshold := max(p.MinExcessBytes, int64(math.Min(k*sigma0, math.MaxInt64/2)))
	steps, cuts := findSteps(times, gaps, med, half, stepThreshold, cfg.MinSamplesPerRank)

	// Pass 2: the baseline is the running median within each level, so a
	// step neither hides spikes after it nor counts as one.
	base := med
	if len(cuts) > 0 {
		runningMedian(times, gaps, half, cuts, base, &sc.window)
	}
	ra.sigma = robustSigma(gaps, base, floor, sc.ints(n))
	ra.threshold = max(p.MinExcessBytes, int64(math.Min(k*ra.sigma, math.MaxInt64/2)), 1)

	for _, st := range steps {
		i := st.onset
		ep := episode{
			rank: idx, persistent: true, first: i, last: i, peak: i,
			riseLo: prevTime(times, i, ra.interval), riseHi: times[i],
			fallLo: times[i], fallHi: times[i],
			excess: st.height,
		}
		ep.zscore = float64(st.height) / ra.sigma
		ra.episodes = append(ra.episodes, ep)
	}
	for i := 0; i < n; {
		if gaps[i]-base[i] < ra.threshold {
			i++
			continue
		}
		j := i
		peak := i
		for j+1 < n && gaps[j+1]-base[j+1] >= ra.threshold {
			j++
			if gaps[j]-base[j] > gaps[peak]-base[peak] {
				peak = j
			}
		}
		ep := episode{
			rank: idx, first: i, last: j, peak: peak,
			riseLo: prevTime(times, i, ra.interval), riseHi: times[i],
			fallLo: times[j], fallHi: nextTime(times, j, ra.interval),
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
	onset  int
	height int64 // > 0 up, < 0 down
}

// findSteps finds level changes of at least threshold: where the running
// median one window after a sample differs from the one a window before it
// (each covers 2·half of data on its side). The onset is the last sample in
// that stretch where the series crosses to the new level and then holds it
// (holdShare of the next 2·half) while it had not before (under
// priorShare of the previous 2·half): a spike just before the step is not
// its onset. It returns the steps up (persistent episodes) and the cuts of
// every step, up or down, as segment starts for the baseline.
func findSteps(times, gaps, med []int64, half, threshold, minSamples int64) ([]step, []int) {
	n := len(times)
	var ups []step
	var cuts []int
	left := 0  // last index with times[left] <= t - half
	right := 0 // first index with times[right] >= t + half
	i := 0
	for i < n {
		t := times[i]
		for left+1 < n && times[left+1] <= satSub(t, half) {
			left++
		}
		for right < n-1 && times[right] < satAdd(t, half) {
			right++
		}
		delta := med[right] - med[left]
		if delta < threshold && -delta < threshold {
			i++
			continue
		}
		// The stretch of samples whose before/after medians differ by the
		// threshold in the same direction.
		up := delta > 0
		lo, hi := i, i
		before, height := med[left], delta
		l2, r2 := left, right
		for hi+1 < n {
			t2 := times[hi+1]
			for l2+1 < n && times[l2+1] <= satSub(t2, half) {
				l2++
			}
			for r2 < n-1 && times[r2] < satAdd(t2, half) {
				r2++
			}
			d := med[r2] - med[l2]
			if (up && d < threshold) || (!up && -d < threshold) {
				break
			}
			hi++
			if (up && d > height) || (!up && d < height) {
				before, height = med[l2], d
			}
		}
		mid := before + height/2
		onset := -1
		for j := hi; j >= lo; j-- {
			if !crosses(gaps, j, mid, up) {
				continue
			}
			if holds(times, gaps, j, mid, up, 2*half, minSamples) {
				onset = j
				break
			}
		}
		if onset >= 0 {
			cuts = append(cuts, onset)
			if up {
				ups = append(ups, step{onset: onset, height: height})
			}
		}
		i = hi + 1
	}
	return ups, cuts
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
// priorShare of (t_j-span, t_j)), with at least minSamples samples on each
// side.
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
	if after < minSamples || before < minSamples {
		return false
	}
	return float64(afterOn) >= holdShare*float64(after) && float64(beforeOn) < priorShare*float64(before)
}
