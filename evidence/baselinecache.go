package evidence

import (
	"slices"
	"sort"
)

// BaselineCache keeps one rank's per-sample analysis (its side medians,
// baseline, steps and spreads) from one evaluation to the next. A
// sample's results depend only on the samples within about one span of
// it, so when the rank's samples are last time's with some dropped at the
// front and some added at the end, only those near either end are
// recomputed; the rest stay where they are (docs/benchmarks.md, "Evidence
// mode's per-rank analysis kept incrementally").
//
// The cache compares the samples themselves with the ones it computed on,
// so it never needs telling what changed: evictions, out-of-order inserts,
// rewritten values and a new span all show as a shorter run of samples in
// common, down to none (everything recomputed). Its columns hold the
// samples from off on, with room after them: samples dropped at the front
// only move off, new ones are written after the run kept, and the columns
// are compacted when the room runs out. Its zero value is empty and ready;
// it is rebuilt by use, never saved.
type BaselineCache struct {
	off, n int // the samples are columns[off : off+n]

	times, vals   []int64
	left, right   []int64
	leftN, rightN []int32
	base          []int64

	// What sync learned of the last change: the new samples [0, m) are
	// old ones (in the columns they did not move); before and after are
	// the times of the old samples on either side of that run, when there
	// were any (hasBefore, hasAfter).
	m                   int
	before, after       int64
	hasBefore, hasAfter bool

	// seq numbers the first of the last samples, when sequenced
	// (Samples.FirstSeq).
	seq       uint64
	sequenced bool

	span int64 // of the side columns (0: none computed)
	// [p, q) are the samples whose side medians were kept by the last
	// sides: their spans hold the same samples as before.
	p, q int

	// interval is the last typical interval and regular whether every
	// spacing of the samples is that interval (sync keeps it so).
	interval int64
	regular  bool
	// res0 and res count the absolute residuals of the samples around
	// their right side's median and around their baseline against the
	// last median of each, kept up to date as samples and their medians
	// change: where the data changed little, the median is still that.
	res0, res residualCount

	// The last step scan: its parameters, its runs and their steps, with
	// indices into the columns (not shifted by off).
	stepsKept                      bool
	stepSpan, stepThr, stepMinimum int64
	runs                           []stepRun
	steps                          []step
	// The last baseline's cuts (indices into the columns); baseKept:
	// the baseline column holds the baseline they cut.
	baseKept bool
	cuts     []int

	// above lists the samples (indices into the columns) whose excess
	// over the baseline reached aboveLevel, the last weak level
	// (aboveKept: it is that of the cache's samples).
	aboveKept  bool
	aboveLevel int64
	above      []int

	// episodes holds the episodes the last analysis found, its memory
	// reused by the next.
	episodes []episode

	// The strong spikes of the last analysis, at spikeLevels (spikesKept:
	// there was one), and those of the analysis under way; spikesOK: the
	// levels are the same, so the last ones may be taken (takeSpike, from
	// spikeAt on, the stretches rebased from rebasedAt on ruling them out).
	spikes, spikesNext []keptSpike
	spikeLevels        spikeLevels
	spikesKept         bool
	spikesOK           bool
	spikeAt, rebasedAt int
	rebased            [][2]int
	// syncs counts the syncs, spikesSynced was the count when the spikes
	// were kept.
	syncs, spikesSynced uint64
}

// sideScratch is the memory the cache recomputes a stretch of samples in.
type sideScratch struct {
	left, right   []int64
	leftN, rightN []int32
	// window holds the new samples' first left window (endSides).
	window windowMedian
}

func (s *sideScratch) grow(n int) {
	if cap(s.left) < n {
		s.left, s.right = make([]int64, n), make([]int64, n)
		s.leftN, s.rightN = make([]int32, n), make([]int32, n)
	}
	s.left, s.right = s.left[:n], s.right[:n]
	s.leftN, s.rightN = s.leftN[:n], s.rightN[:n]
}

// sync makes s's samples the cache's, keeping in place the run of them
// that the last ones held too.
func (c *BaselineCache) sync(s *Samples) {
	c.syncs++
	times, vals := s.TimesNs, s.GapBytes
	var d, m int
	if s.Sequenced && c.sequenced {
		d, m = c.numberedRun(s.FirstSeq, times, vals)
	} else {
		d, m = c.commonRun(times, vals)
	}
	c.seq, c.sequenced = s.FirstSeq, s.Sequenced
	old := liveOf(c, c.times)
	c.m = m
	// Regular samples stay regular while the new ones keep the spacing.
	c.regular = c.regular && m > 0
	for i := max(m, 1); i < len(times) && c.regular; i++ {
		c.regular = times[i]-times[i-1] == c.interval
	}
	c.hasBefore, c.hasAfter = m > 0 && d > 0, m > 0 && m+d < len(old)
	if c.hasBefore {
		c.before = old[d-1]
	}
	if c.hasAfter {
		c.after = old[m+d]
	}
	// The samples that leave no longer count; with none kept, the counts
	// start again.
	c.res0.ok, c.res.ok = c.res0.ok && m > 0, c.res.ok && m > 0
	for _, leaving := range [][2]int{{c.off, c.off + d}, {c.off + d + m, c.off + len(old)}} {
		for i := leaving[0]; i < leaving[1]; i++ {
			c.res0.count(c.vals[i], c.right[i], -1)
			c.res.count(c.vals[i], c.base[i], -1)
		}
	}
	n := len(times)
	off := c.off + d
	if m == 0 {
		off = 0
	}
	if off+n > len(c.times) {
		// Compact: the run moves to the front, with room for an eighth
		// more samples.
		size := max(len(c.times), n+n/8)
		c.times, c.vals = moveRun(c.times, off, m, size), moveRun(c.vals, off, m, size)
		c.left, c.right = moveRun(c.left, off, m, size), moveRun(c.right, off, m, size)
		c.leftN, c.rightN = moveRun(c.leftN, off, m, size), moveRun(c.rightN, off, m, size)
		c.base = moveRun(c.base, off, m, size)
		c.shift(-off)
		off = 0
	}
	c.off, c.n = off, n
	copy(c.times[off+m:off+n], times[m:])
	copy(c.vals[off+m:off+n], vals[m:])
}

// numberedRun is commonRun for samples numbered from first, the last ones
// from c.seq: the run they share is the samples whose numbers both hold,
// which one number naming one sample makes equal without comparing them.
// Its ends are compared all the same, and where they differ (numbers that
// do not name what Samples promises) every sample is.
func (c *BaselineCache) numberedRun(first uint64, times, vals []int64) (d, m int) {
	oldT, oldV := liveOf(c, c.times), liveOf(c, c.vals)
	old, n := len(oldT), len(times)
	if n == 0 || old == 0 || first < c.seq || first-c.seq >= uint64(old) {
		return old, 0
	}
	d = int(first - c.seq)
	m = min(n, old-d)
	if times[0] != oldT[d] || vals[0] != oldV[d] || times[m-1] != oldT[d+m-1] || vals[m-1] != oldV[d+m-1] {
		return c.commonRun(times, vals)
	}
	return d, m
}

// moveRun returns s with its run [off, off+m) at the front, of length
// size (a new slice when s is shorter).
func moveRun[T any](s []T, off, m, size int) []T {
	if len(s) < size {
		t := make([]T, size)
		copy(t, s[off:off+m])
		return t
	}
	copy(s, s[off:off+m])
	return s
}

// liveOf is the part of the cache's column s that holds its samples.
func liveOf[T any](c *BaselineCache, s []T) []T { return s[c.off : c.off+c.n] }

// commonRun finds the new samples' longest prefix [0, m) that the cache
// holds as its samples [d, d+m).
func (c *BaselineCache) commonRun(times, vals []int64) (d, m int) {
	oldT, oldV := liveOf(c, c.times), liveOf(c, c.vals)
	old, n := len(oldT), len(times)
	if n == 0 || old == 0 {
		return old, 0
	}
	d = sort.Search(old, func(k int) bool { return oldT[k] >= times[0] })
	for d < old && oldT[d] == times[0] && oldV[d] != vals[0] {
		d++
	}
	if d == old || oldT[d] != times[0] {
		return old, 0
	}
	k := min(n, old-d)
	t, v, ov := times[:k], vals[:k], oldV[d:d+k]
	if c.regular {
		// Every spacing of the old samples was c.interval, so old time
		// d+i is oldT[d] + i·interval (in int64's wrapping arithmetic, as
		// the spacings were taken): the new times are compared with that,
		// without reading the old ones from memory.
		want := oldT[d]
		for m < k && t[m] == want && v[m] == ov[m] {
			m++
			want += c.interval
		}
		return d, m
	}
	ot := oldT[d : d+k]
	for m < k && t[m] == ot[m] && v[m] == ov[m] {
		m++
	}
	return d, m
}

// sides returns what sideMedians writes for the samples synced last,
// reusing the last call's results where the samples within a span are
// the same: dropping samples at the front changes only the left medians
// of the samples within a span of it, adding samples at the end only the
// right medians of those within a span of it (and both of the new ones).
// The slices are the cache's own, valid until its next use.
func (c *BaselineCache) sides(span int64, w *windowMedian, ss *sideScratch) (left, right []int64, leftN, rightN []int32) {
	n := c.n
	p, e := 0, 0
	if c.span == span {
		p, e = c.reusable(span)
	}
	times, vals := liveOf(c, c.times), liveOf(c, c.vals)
	left, right = liveOf(c, c.left), liveOf(c, c.right)
	leftN, rightN = liveOf(c, c.leftN), liveOf(c, c.rightN)
	if c.span != span || c.m == 0 {
		c.recompute(0, n, span, w, ss)
		p, e = n, n
		c.res0.ok = false
	} else {
		leftMedians(times, vals, 0, p, span, left, leftN, w)
		for i := e; i < c.m; i++ {
			c.res0.count(vals[i], right[i], -1)
		}
		c.endSides(e, span, w, &ss.window)
		for i := e; i < n; i++ {
			c.res0.count(vals[i], right[i], 1)
		}
	}
	c.span = span
	c.p, c.q = p, max(p, e)
	return left, right, leftN, rightN
}

// endSides writes the left medians of the new samples [m, n) and the
// right medians of [e, n). The left span of the first new sample usually
// begins at e, the first sample whose right span reaches it: then the
// right medians' window at e, sorted once, less the samples from m on,
// is the left medians' first window (w2), instead of a second sort.
func (c *BaselineCache) endSides(e int, span int64, w, w2 *windowMedian) {
	times, vals := liveOf(c, c.times), liveOf(c, c.vals)
	left, right := liveOf(c, c.left), liveOf(c, c.right)
	leftN, rightN := liveOf(c, c.leftN), liveOf(c, c.rightN)
	m, n := c.m, c.n
	if m < n && e < m {
		lo := sort.Search(m, func(k int) bool { return times[k] >= satSub(times[m], span) })
		if hi := rightEnd(times, e, span); lo == e && hi > m {
			w.fill(vals[e:hi])
			w2.sorted = append(w2.sorted[:0], w.sorted...)
			for k := m; k < hi; k++ {
				w2.remove(vals[k])
			}
			leftMediansFilled(times, vals, lo, m, n, span, left, leftN, w2)
			rightMediansFilled(times, vals, e, hi, n, span, right, rightN, w)
			return
		}
	}
	leftMedians(times, vals, m, n, span, left, leftN, w)
	rightMedians(times, vals, e, n, span, right, rightN, w)
}

// reusable bounds the run synced last where the side medians stay: from
// p on, the left spans [t_i - span, t_i) do not reach the old sample
// before the run; before e, the right spans [t_i, t_i + span] do not
// reach the first sample after it, new or old.
func (c *BaselineCache) reusable(span int64) (p, e int) {
	times, m := liveOf(c, c.times), c.m
	if c.hasBefore {
		p = searchFrom(m, 0, func(i int) bool { return satSub(times[i], span) > c.before })
	}
	e = m
	if m < len(times) {
		e = searchFrom(m, m, func(i int) bool { return satAdd(times[i], span) >= times[m] })
	}
	if c.hasAfter {
		e = min(e, searchFrom(m, m, func(i int) bool { return satAdd(times[i], span) >= c.after }))
	}
	return p, e
}

// recompute writes the side medians of samples [from, to) from the samples
// their spans reach.
func (c *BaselineCache) recompute(from, to int, span int64, w *windowMedian, ss *sideScratch) {
	if from >= to {
		return
	}
	times, vals := liveOf(c, c.times), liveOf(c, c.vals)
	start := satSub(times[from], span)
	lo := searchFrom(from, from, func(k int) bool { return times[k] >= start })
	stop := satAdd(times[to-1], span)
	hi := to + searchFrom(len(times)-to, 0, func(k int) bool { return times[to+k] > stop })
	ss.grow(hi - lo)
	sideMedians(times[lo:hi], vals[lo:hi], span, ss.left, ss.right, ss.leftN, ss.rightN, w)
	copy(liveOf(c, c.left)[from:to], ss.left[from-lo:to-lo])
	copy(liveOf(c, c.right)[from:to], ss.right[from-lo:to-lo])
	copy(liveOf(c, c.leftN)[from:to], ss.leftN[from-lo:to-lo])
	copy(liveOf(c, c.rightN)[from:to], ss.rightN[from-lo:to-lo])
}

// typicalInterval is typicalInterval of the samples synced last: while
// they are regular (sync checked the spacings of the new ones), their
// spacing.
func (c *BaselineCache) typicalInterval(scratch []int64) int64 {
	times := liveOf(c, c.times)
	n := len(times)
	if n < 2 {
		c.interval, c.regular = 0, false
		return 0
	}
	if c.regular {
		return c.interval
	}
	first := times[1] - times[0]
	c.regular = true
	for i := 2; i < n && c.regular; i++ {
		c.regular = times[i]-times[i-1] == first
	}
	if c.regular {
		c.interval = first
	} else {
		c.interval = medianNear(spacings(times, scratch), c.interval)
	}
	return c.interval
}

// levels is levelsOf for rd (whose samples are the cache's next), kept
// from the last call where its inputs did not change.
func (c *BaselineCache) levels(rd *RankData, cfg *Config, sc *scratch) rankLevels {
	s := &rd.Samples
	n := s.Len()
	p := &cfg.Evidence
	times, gaps := s.TimesNs, s.GapBytes
	floor := float64(p.SpreadFloorBytes)
	var lv rankLevels
	c.sync(s)
	lv.interval = max(c.typicalInterval(sc.ints(n)), 1)
	lv.span = baselineSpan(p, lv.interval)
	lv.left, lv.right, lv.leftN, lv.rightN = c.sides(lv.span, &sc.window, &sc.sides)
	lv.sigma0 = sigmaOf(c.res0.median(gaps, lv.right, sc.ints(n)), floor)
	lv.steps, lv.cuts = c.findSteps(&lv, times, gaps, weakStepOf(lv.sigma0), cfg.MinSamplesPerRank)
	if starts := sessionStarts(s); len(starts) > 0 {
		lv.steps, lv.cuts = splitSessions(times, lv.steps, lv.cuts, starts, lv.span)
	}
	lv.base = c.baseline(&lv, times, gaps, nearLevelOf(p, lv.interval), sc)
	lv.sigma = sigmaOf(c.res.median(gaps, lv.base, sc.ints(n)), floor)
	lv.above, lv.aboveListed = c.aboveWeak(gaps, lv.base, weakLevelOf(cfg, lv.sigma), sc), true
	return lv
}

// shift moves the kept column indices (steps, cuts, samples above the
// weak level) by k: the columns were compacted.
func (c *BaselineCache) shift(k int) {
	for i := range c.runs {
		c.runs[i].lo += k
		c.runs[i].hi += k
	}
	for i := range c.steps {
		c.steps[i] = shiftStep(c.steps[i], k)
	}
	for i := range c.cuts {
		c.cuts[i] += k
	}
	for i := range c.above {
		c.above[i] += k
	}
	for i := range c.spikes {
		ks := &c.spikes[i]
		ks.start, ks.end, ks.ep = ks.start+k, ks.end+k, shiftEpisode(ks.ep, k)
	}
}

// shiftStep moves a step's sample indices by k (those that are set).
func shiftStep(st step, k int) step {
	st.onset += k
	if st.stairLast > 0 {
		st.stairLast += k
	}
	if st.hiddenFrom > 0 {
		st.hiddenFrom += k
	}
	return st
}

// findSteps is findSteps of the levels' sides, with the runs of the last
// scan kept where everything a run's judgement reads is unchanged: the
// samples within two spans of it and its sides (stepZone). The scan
// judges the runs before and after those again; a change of span,
// threshold or minSamples judges them all.
func (c *BaselineCache) findSteps(lv *rankLevels, times, gaps []int64, threshold, minSamples int64) ([]step, []int) {
	f := stepScan{times: times, gaps: gaps, left: lv.left, right: lv.right, leftN: lv.leftN, rightN: lv.rightN,
		span: lv.span, threshold: threshold, minSamples: minSamples, track: true}
	n := len(times)
	a, b := 0, 0 // the old runs that begin in [a, b) are kept
	if c.stepsKept && c.stepSpan == lv.span && c.stepThr == threshold && c.stepMinimum == minSamples {
		a, b = c.stepZone(times, lv.span)
	}
	i := 0
	if b > a {
		i = f.scan(0, a)
	}
	if b > a && i == a {
		for _, r := range c.runs {
			lo, hi := r.lo-c.off, r.hi-c.off
			if lo < a || lo >= b {
				continue
			}
			s0 := len(f.ups)
			for _, st := range c.steps[r.s0:r.s1] {
				f.ups = append(f.ups, shiftStep(st, -c.off))
			}
			f.runs = append(f.runs, stepRun{lo: lo, hi: hi, s0: s0, s1: len(f.ups)})
		}
		i = b
	}
	f.scan(i, n)
	c.stepsKept, c.stepSpan, c.stepThr, c.stepMinimum = true, lv.span, threshold, minSamples
	c.runs, c.steps = c.runs[:0], c.steps[:0]
	for _, r := range f.runs {
		c.runs = append(c.runs, stepRun{lo: r.lo + c.off, hi: r.hi + c.off, s0: r.s0, s1: r.s1})
	}
	for _, st := range f.ups {
		c.steps = append(c.steps, shiftStep(st, c.off))
	}
	return f.result()
}

// stepZone is where the runs of the last step scan are kept: [a, b) such
// that every sample a run in it reads (within two spans after and one
// span before its samples, 2·jumpSamples+1 samples either side) lies
// among the samples whose side medians sides kept, and neither a nor b
// falls inside a run (so the scan before a ends there, and the scan from b
// begins a run where the last one did).
func (c *BaselineCache) stepZone(times []int64, span int64) (a, b int) {
	p, q := c.p, c.q
	if q-p <= 2*(2*jumpSamples+2) {
		return 0, 0
	}
	margin := 2*jumpSamples + 2
	a = max(p+margin, searchFrom(len(times), p, func(j int) bool { return times[j] > satAdd(times[p], span) }))
	b = min(q-margin, searchFrom(len(times), q-1, func(j int) bool { return satAdd(times[j], satMul(2, span)) >= times[q-1] }))
	for _, r := range c.runs {
		lo, hi := r.lo-c.off, r.hi-c.off
		if lo < a && a <= hi {
			a = hi + 1
		}
		if lo < b && b <= hi {
			b = lo
		}
	}
	return a, b
}

// baseline is levelBaseline of the levels, kept where a sample's sides
// were kept and no cut within a span of it changed: only such cuts move
// where its baseline may reach.
func (c *BaselineCache) baseline(lv *rankLevels, times, gaps []int64, near nearLevel, sc *scratch) []int64 {
	n, off := len(times), c.off
	base := liveOf(c, c.base)
	p, q := c.p, c.q
	if !c.baseKept || q <= p {
		p, q = n, n
		c.res.ok = false
	}
	dirty := append(sc.spans[:0], [2]int{0, p}, [2]int{q, n})
	if q > p {
		// The cuts of the run kept, old and new, that are not both.
		old := c.cuts
		k := 0
		for k < len(old) && old[k]-off < 0 {
			k++
		}
		j := 0
		m := c.m
		for {
			var cut int
			switch {
			case k < len(old) && old[k]-off < m && (j >= len(lv.cuts) || lv.cuts[j] >= m || old[k]-off < lv.cuts[j]):
				cut = old[k] - off
				k++
			case j < len(lv.cuts) && lv.cuts[j] < m && (k >= len(old) || old[k]-off >= m || lv.cuts[j] < old[k]-off):
				cut = lv.cuts[j]
				j++
			case k < len(old) && j < len(lv.cuts) && old[k]-off < m && lv.cuts[j] < m:
				k++ // the same cut in both
				j++
				continue
			default:
				cut = -1
			}
			if cut < 0 {
				break
			}
			from := sort.Search(n, func(i int) bool { return times[i] >= satSub(times[max(cut-1, 0)], lv.span) })
			to := sort.Search(n, func(i int) bool { return times[i] > satAdd(times[cut], lv.span) })
			dirty = append(dirty, [2]int{max(from, p), min(to, q)})
		}
	}
	slices.SortFunc(dirty, func(x, y [2]int) int { return x[0] - y[0] })
	done := 0
	sc.rebased = sc.rebased[:0]
	for _, d := range dirty {
		from := max(d[0], done)
		if from >= d[1] {
			continue
		}
		for i := from; i < min(d[1], c.m); i++ {
			c.res.count(gaps[i], base[i], -1)
		}
		levelBaselineOf(from, d[1], times, gaps, lv.left, lv.right, lv.leftN, lv.rightN, lv.span, lv.cuts, near, base, sc)
		for i := from; i < d[1]; i++ {
			c.res.count(gaps[i], base[i], 1)
		}
		sc.rebased = append(sc.rebased, [2]int{from, d[1]})
		done = d[1]
	}
	sc.spans = dirty
	c.baseKept = true
	c.cuts = c.cuts[:0]
	for _, cut := range lv.cuts {
		c.cuts = append(c.cuts, cut+off)
	}
	return base
}

// residualCount counts the absolute residuals |v - ref| of a rank's
// samples below and at guess, the last median of them; ok says the counts
// are those of the cache's samples.
type residualCount struct {
	ok        bool
	guess     int64
	below, at int
}

// count adds (sign 1) or removes (sign -1) one sample's residual.
func (r *residualCount) count(v, ref int64, sign int) {
	if !r.ok {
		return
	}
	d := v - ref
	d = max(d, -d)
	// Without branches: residuals fall on both sides of the guess about
	// equally often.
	r.below += sign * b2i(d < r.guess)
	r.at += sign * b2i(d == r.guess)
}

// b2i is 1 for true, 0 for false (a flag set, not a branch).
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// median is the lower median of |vals[i] - ref[i]| (vals not empty): the
// guess while the counts say so, else found anew and counted against.
func (r *residualCount) median(vals, ref []int64, scratch []int64) int64 {
	if k := (len(vals) - 1) / 2; r.ok && k >= r.below && k < r.below+r.at {
		return r.guess
	}
	r.guess = madNear(vals, ref, r.guess, scratch)
	r.below, r.at = 0, 0
	r.ok = true
	for i, v := range vals {
		r.count(v, ref[i], 1)
	}
	return r.guess
}

// aboveWeak lists the samples whose excess over the baseline (base, from
// the last baseline call) reaches level, in order: a sample's excess
// changes only where its baseline was recomputed (sc.rebased, which
// covers the new samples), so the last list is kept elsewhere while the
// level is the same.
func (c *BaselineCache) aboveWeak(gaps, base []int64, level int64, sc *scratch) []int {
	out := sc.above[:0]
	old, rebased := c.above, sc.rebased
	if !c.aboveKept || c.aboveLevel != level {
		old, rebased = nil, [][2]int{{0, len(gaps)}}
	}
	k, pos := 0, 0
	keep := func(to int) { // the old entries in [pos, to)
		for ; k < len(old) && old[k]-c.off < to; k++ {
			if v := old[k] - c.off; v >= pos {
				out = append(out, v)
			}
		}
	}
	base = base[:len(gaps)]
	for _, r := range rebased {
		keep(r[0])
		for i := r[0]; i < r[1]; i++ {
			if gaps[i]-base[i] >= level {
				out = append(out, i)
			}
		}
		pos = r[1]
	}
	keep(c.m)
	sc.above = out
	c.aboveKept, c.aboveLevel = true, level
	c.above = c.above[:0]
	for _, v := range out {
		c.above = append(c.above, v+c.off)
	}
	return out
}
