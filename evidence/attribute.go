package evidence

import (
	"cmp"
	"math"
	"slices"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/internal/parallel"
)

// scratch holds buffers reused across ranks.
type scratch struct {
	buf    []int64
	med    []int64
	sides  sideScratch
	window windowMedian
	spans  [][2]int // BaselineCache.baseline's stretches to recompute
	// rebased are the stretches whose baseline BaselineCache.baseline
	// recomputed; above the samples above the weak level.
	rebased [][2]int
	above   []int
}

// sideColumns are the side medians' columns of a rank without a
// BaselineCache.
func (s *scratch) sideColumns(n int) (left, right []int64, leftN, rightN []int32) {
	s.sides.grow(n)
	return s.sides.left, s.sides.right, s.sides.leftN, s.sides.rightN
}

func (s *scratch) ints(n int) []int64 {
	if cap(s.buf) < n {
		s.buf = make([]int64, 0, n)
	}
	return s.buf[:0]
}

func (s *scratch) median(n int) []int64 {
	if cap(s.med) < n {
		s.med = make([]int64, n)
	}
	return s.med[:n]
}

// Attribute runs evidence mode over one job's input with a resolved
// configuration; resolver may be nil (no phase attribution). Every change
// found (a transient spike or the onset of a persistent step) gives one
// result whose confidence reaches cfg.MinConfidence; results are sorted by
// (rank, interval start); their ReasonCodes share read-only backing arrays.
// It does not modify in, apart from the ranks' Baseline caches, so two
// calls must not share a cache concurrently.
func Attribute(in *Input, cfg Config, resolver attribution.PhaseResolver) []attribution.Result {
	return AttributeParallel(in, cfg, resolver, 1)
}

// AttributeParallel is Attribute with each rank's analysis (its baseline,
// steps and spikes, most of a job's cost) spread over up to workers
// goroutines; the matching of changes to collectives, which reads every
// rank's, follows on one. The results are the same for any workers.
func AttributeParallel(in *Input, cfg Config, resolver attribution.PhaseResolver, workers int) []attribution.Result {
	if in == nil || len(in.Ranks) == 0 {
		return nil
	}
	analyses := make([]rankAnalysis, len(in.Ranks))
	scratches := make([]scratch, max(1, min(workers, len(in.Ranks))))
	parallel.For(len(in.Ranks), len(scratches), func(w, ri int) {
		analyses[ri] = analyzeRank(int32(ri), &in.Ranks[ri], in.Collectives, &cfg, &scratches[w])
	})
	m := newMatcher(in, &cfg, analyses)
	changes := 0
	for ri := range analyses {
		changes += len(analyses[ri].episodes)
	}
	d := decider{m: m, cfg: &cfg, in: in, stamp: make([]int32, len(in.Ranks)),
		matches:  make([]*attribution.CollectiveMatch, len(in.Collectives)),
		outcomes: make([]accountingOutcome, len(in.Collectives)),
		sizes:    make([]changeSize, len(in.Collectives)),
		codes:    make([]string, 0, 2*codesPerSet*maxCodeSets),
		ints:     make([]int64, 0, 2*changes),
		ratios:   make([]float64, 0, changes)}
	results := make([]attribution.Result, 0, changes)
	phase := func(ri int32, ep *episode, r *attribution.Result) {
		if resolver != nil {
			if sess := in.Ranks[ri].Samples.SessionOf(ep.peak); sess != "" {
				r.PhaseAttribution = resolver.Resolve(in.Ranks[ri].Samples.TimesNs[ep.peak], sess, r.Rank)
			}
		}
	}
	// sorted: the results so far are in (rank, interval start) order, as
	// the ranks' changes come, or nearly; checking each as it comes costs
	// less than comparing them (by value) once all are in.
	sorted := true
	for ri := range in.Ranks {
		for ei := range analyses[ri].episodes {
			ep := &analyses[ri].episodes[ei]
			// Decided in place: results holds a result per change.
			results = append(results, attribution.Result{})
			r := &results[len(results)-1]
			if !d.decide(int32(ri), ep, r) {
				results = results[:len(results)-1]
				continue
			}
			if n := len(results); n > 1 {
				prev := &results[n-2]
				sorted = sorted && (prev.Rank < r.Rank || prev.Rank == r.Rank && prev.IntervalStartNs <= r.IntervalStartNs)
			}
			phase(int32(ri), ep, r)
			if d.unchecked {
				d.waiting = append(d.waiting, uncheckedChange{ri: int32(ri), ep: ep, result: len(results) - 1})
			}
		}
	}
	if len(d.waiting) > 0 {
		// Changes no report could tell are judged by their communicator's
		// record over the job, once every change has been judged.
		d.records = d.commRecords()
		dropped := false
		for _, w := range d.waiting {
			r := &results[w.result]
			if d.decide(w.ri, w.ep, r) {
				phase(w.ri, w.ep, r)
			} else {
				*r, dropped = attribution.Result{Rank: -1}, true
			}
		}
		if dropped {
			results = slices.DeleteFunc(results, func(r attribution.Result) bool { return r.Rank < 0 })
		}
	}
	byRankAndStart := func(a, b attribution.Result) int {
		return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.IntervalStartNs, b.IntervalStartNs))
	}
	// Moving thousands of results to find them in order would cost more
	// than checking; the changes decided again may have moved.
	if !sorted || len(d.waiting) > 0 && !slices.IsSortedFunc(results, byRankAndStart) {
		slices.SortStableFunc(results, byRankAndStart)
	}
	separateSteps(results)
	// Changes that only NCCL's reports saw (evidence-mode §2.4), then those
	// only the members' reports show (§2.5), placed apart from the results
	// of the samples.
	var cands []accountingCandidate
	for ri := range in.Ranks {
		cands = d.accountingOnly(int32(ri), cands)
	}
	if cands = d.membersOnly(results, cands); len(cands) > 0 {
		slices.SortStableFunc(cands, func(a, b accountingCandidate) int { return cmp.Compare(a.result.Rank, b.result.Rank) })
	}
	return placeAccountingOnly(results, cands)
}

// separateSteps ends each persistent result of a rank before the next one
// begins. Steps closer together than twice the interval padding (a
// staircase at a sparse rate) are different steps, while the processor
// reads a result of a rank that starts inside one it emitted as that one
// grown; so their intervals must not overlap. results are sorted by rank,
// then start.
func separateSteps(results []attribution.Result) {
	prev := -1
	for i := range results {
		r := &results[i]
		if r.Kind != attribution.KindPersistent {
			continue
		}
		if prev >= 0 && results[prev].Rank == r.Rank && results[prev].IntervalEndNs >= uint64(r.IntervalStartNs) &&
			r.IntervalStartNs > results[prev].IntervalStartNs {
			results[prev].IntervalEndNs = uint64(r.IntervalStartNs - 1)
		}
		prev = i
	}
}

type decider struct {
	m     *matcher
	cfg   *Config
	in    *Input
	stamp []int32
	mark  int32
	// matches holds, per collective, the match its results share: what it
	// says (members, their markers, synchrony) depends on the collective
	// alone, and a collective of the world is matched by every rank.
	matches []*attribution.CollectiveMatch
	// codes, ints and ratios hold the results' reason codes, marker times,
	// accounted bytes and gap ratios, sized once for every change: a job
	// gives thousands of results.
	codes  []string
	ints   []int64
	ratios []float64
	// codeSets are the sets of codes in d.codes that results share.
	codeSets []codeSet
	// outcomes holds, per collective, what NCCL's accounting said of its
	// co-timed transient changes, and sizes the size of the change it was
	// said of; records sums them per communicator once every change has
	// been judged (nil until then), for the changes waiting on them.
	// unchecked says the last change decided waits.
	outcomes  []accountingOutcome
	sizes     []changeSize
	records   map[string]commRecord
	waiting   []uncheckedChange
	unchecked bool
	// counted is accountingOnly's latest raised report per series of a
	// rank, reused from rank to rank.
	counted []int64
	// membersVerdicts holds membersOnly's verdict per collective (nil until
	// asked), shown the growth its members' reports show where they do.
	membersVerdicts []membersVerdict
	shown           map[int32][]int64
	// opRecords holds what NCCL's reports showed per collective, commOps
	// the collectives per communicator, and odds each collective's
	// flatOdds (0 until computed), for rule 7; nil until asked.
	opRecords []opRecord
	commOps   map[string][]int32
	odds      []float64
}

// maxReasonCodes is the most reason codes one result carries;
// codesPerSet is about as many as a result carries (the pool the sets are
// kept in grows when they are more).
const (
	maxReasonCodes = 11
	codesPerSet    = 5
)

// take returns n elements of *pool as a slice of its own (appending to it
// cannot reach the next one), growing the pool when it is used up.
func take[T any](pool *[]T, n int) []T {
	if len(*pool)+n > cap(*pool) {
		*pool = make([]T, 0, max(n, 2*cap(*pool)))
	}
	at := len(*pool)
	*pool = (*pool)[:at+n]
	return (*pool)[at : at+n : at+n]
}

// choice is the best collective candidate for a change.
type choice struct {
	marker int32 // on the change's rank; -1 none
	coll   int32 // NoCollective for a bare marker
	sync   *synchrony
	ratio  float64
	ok     bool // synchronized: at least two members and min_synchrony_ratio of them
	first  bool // the marker is the first use of its (comm, op) on the rank
	// live: the op was still running (within the match tolerance) when the
	// change was first seen. At sparse sampling a rise gap spans several
	// ops; a transient of an op that had ended cannot be what the first
	// high sample shows.
	live bool
	// launched: the op began in the change's rise gap (previous sample,
	// first high sample], where the change began.
	launched bool
}

func (d *decider) better(a, b choice) bool {
	switch {
	case a.marker < 0:
		return true
	case a.coll == NoCollective && b.coll != NoCollective:
		return true
	case b.coll == NoCollective:
		return false
	case a.ok != b.ok:
		return b.ok
	case a.live != b.live:
		return b.live
	case a.first != b.first:
		return b.first
	case a.launched != b.launched:
		return b.launched
	}
	return b.ratio > a.ratio
}

// decide turns one change into result r, or reports that it falls below
// min_confidence (r is then unspecified).
func (d *decider) decide(ri int32, ep *episode, r *attribution.Result) bool {
	d.unchecked = false
	rd := &d.in.Ranks[ri]
	cfg := d.cfg
	best := choice{marker: -1, coll: NoCollective}
	outlasted := false
	longest := int32(-1) // the candidate marker of the longest op
	d.m.candidates(ri, ep, func(mi int32) {
		mk := &rd.Markers[mi]
		if longest < 0 || mk.EndNs-mk.StartNs > rd.Markers[longest].EndNs-rd.Markers[longest].StartNs {
			longest = mi
		}
		if ep.down && !d.releases(ri, mi, ep) {
			return
		}
		if d.outlasts(ep, mk) && !d.accountingCovers(ri, ep, mk) {
			outlasted = true
			return
		}
		c := choice{marker: mi, coll: mk.Collective,
			live:     ep.persistent || satAdd(mk.EndNs, d.m.tolerance(mk).after) >= ep.riseHi,
			launched: mk.StartNs > ep.riseLo && mk.StartNs <= ep.riseHi}
		if mk.Collective != NoCollective {
			s := d.m.synchronyOf(mk.Collective)
			c.sync = s
			if s.observed > 0 {
				c.ratio = float64(s.synced) / float64(s.observed)
			}
			c.ok = s.synced >= 2 && c.ratio >= cfg.MinSynchronyRatio && s.corroborated()
			// A change within the rank's noise is corroborated only by the
			// change the collective's synchrony counted on this rank: one
			// collective instance makes one rise per member, and allocator
			// churn shortly before it (inside a wide approximate tolerance)
			// is not that rise.
			if c.ok && ep.weak {
				own := d.m.changeAt[ri][mi].episode
				c.ok = own >= 0 && &d.m.analyses[ri].episodes[own] == ep
			}
			c.first = d.m.firstUse[ri][mi]
		}
		if d.better(best, c) {
			best = c
		}
	})

	if (ep.weak || ep.down) && !(best.marker >= 0 && best.coll != NoCollective && best.ok) {
		return false
	}
	if ep.stairLast > 0 && best.marker >= 0 && best.coll != NoCollective && !best.first {
		// The lower stair of a staircase that no first use explains is a
		// spike of a collective ending onto the next step, unless it
		// outlasts even the longest op it could belong to: then it is a
		// level of its own.
		spike := *ep
		spike.persistent, spike.last = false, ep.stairLast
		times := rd.Samples.TimesNs
		spike.fallLo, spike.fallHi = times[ep.stairLast], nextTime(times, ep.stairLast, d.m.analyses[ri].interval)
		if !d.outlasts(&spike, &rd.Markers[longest]) {
			ep = &spike
		}
	}
	// The codes are gathered here and kept in d.codes at the size they
	// come to: most results carry a few of maxReasonCodes.
	var gathered [maxReasonCodes]string
	codes := gathered[:0]
	kind := attribution.KindTransient
	if ep.persistent {
		kind = attribution.KindPersistent
		codes = append(codes, ReasonPersistentStep)
	} else if ep.weak {
		codes = append(codes, ReasonExcessCorroborated)
	} else {
		codes = append(codes, ReasonExcessOverBaseline)
	}
	var (
		class string
		conf  float64
	)
	synced := int64(0)
	ratio := 0.0
	polled := false // the rise gap is longer than the matched op and its tolerance
	if best.marker < 0 && outlasted {
		codes = append(codes, ReasonOutlastsCollective)
	}
	if d.newProcess(rd, ep) {
		codes = append(codes, ReasonNewProcess)
	}
	if ep.creep {
		codes = append(codes, ReasonBaselineCreep)
	}
	switch {
	case best.marker < 0:
		codes = append(codes, ReasonNoCollectiveMarker)
		class, conf = attribution.CollectiveSuspect, 0.2
	case best.coll == NoCollective:
		codes = append(codes, ReasonCollectiveMarker, ReasonMarkerWithoutIdentity)
		d.mark++
		count, dense := d.m.worldSynchrony(ri, ep.riseHi, cfg.SynchronyWindowNs, d.stamp, d.mark)
		synced = int64(count)
		if ews := d.in.ExpectedWorldSize; ews > 1 {
			ratio = min(1, float64(count-1)/float64(ews-1))
		}
		// Synchrony within the window is not claimed from ranks whose
		// samples are farther apart than it (evidence-mode §7.6).
		coarse := count >= 2 && dense < 2
		if coarse {
			codes = append(codes, ReasonCoarseSampling)
		}
		if count >= 2 && !coarse && ratio >= cfg.MinSynchronyRatio {
			codes = append(codes, ReasonWorldSynchrony)
			class, conf = attribution.CollectiveLikely, 0.6+0.18*ratio
		} else {
			class, conf = attribution.CollectiveSuspect, 0.3+0.25*ratio
		}
	default:
		codes = append(codes, ReasonCollectiveMarker)
		synced, ratio = int64(best.sync.synced), best.ratio
		mk := &rd.Markers[best.marker]
		polled = ep.riseHi-ep.riseLo > mk.EndNs-mk.StartNs+2*cfg.Evidence.MatchToleranceNs
		if polled || best.sync.unseen > 0 {
			codes = append(codes, ReasonCoarseSampling)
		}
		switch {
		case !best.ok:
			codes = append(codes, ReasonInsufficientSynchrony)
			class, conf = attribution.CollectiveSuspect, 0.3+0.25*ratio
		case ep.down:
			codes = append(codes, ReasonMemberSynchrony, ReasonCommReleased)
			class, conf = attribution.CollectiveConfident, 0.8+0.1*ratio
		case ep.persistent && best.first:
			codes = append(codes, ReasonMemberSynchrony, ReasonStepAtFirstUse)
			class, conf = attribution.CollectiveConfident, 0.8+0.1*ratio
		case !ep.persistent && best.sync.resolved:
			codes = append(codes, ReasonMemberSynchrony, ReasonResolvedInInterval)
			class, conf = attribution.CollectiveConfident, 0.8+0.1*ratio
		default:
			codes = append(codes, ReasonMemberSynchrony, ReasonCotimedOnly)
			class, conf = attribution.CollectiveLikely, 0.6+0.18*ratio
		}
		if mk.Approximate && class == attribution.CollectiveConfident {
			codes = append(codes, ReasonApproximateTiming)
			class, conf = attribution.CollectiveLikely, 0.78
		}
	}

	// NCCL's own accounting overrides what timing alone suggests (evidence-mode
	// §2.3): it confirms a change its reports show, and denies one that none
	// of the reports shows where they would surely have shown it, on this
	// rank or over the collective's members together. Where too few reports
	// fell where the change could have been, timing decides; where the
	// accounting does not follow NCCL's buffers (cuMem off), too.
	comm := ""
	var onset *Marker
	if best.marker >= 0 && best.coll != NoCollective {
		comm = CanonicalCommID(d.in.Collectives[best.coll].CommID)
		onset = &rd.Markers[best.marker]
		if !best.live {
			// A transient of an op that had ended when the change was first
			// seen cannot be what that sample shows (§3.3): the members'
			// synchrony chose it, but NCCL's memory is read against the op
			// of the communicator still running then.
			if li := d.liveOp(ri, ep, best.coll); li >= 0 {
				onset = &rd.Markers[li]
			}
		}
	}
	var acct accountingVerdict
	if !ep.down { // a release is read against the communicator's last report
		acct = d.m.accountingOf(ri, ep, comm, onset)
	}
	var accounted *int64
	switch {
	case ep.down && class == attribution.CollectiveConfident:
		// The communicator's last report is what its release freed
		// (evidence-mode §7.1).
		if freed, ok := d.m.releasedTotal(ri, ep, comm); ok {
			codes = append(codes, ReasonAccountingCovers)
			class, conf = attribution.CollectiveConfirmed, 0.95
			accounted = &take(&d.ints, 1)[0]
			*accounted = -freed
		}
	case !acct.present:
	case acct.untracked:
		codes = append(codes, ReasonAccountingUntracked)
	default:
		accounted = &take(&d.ints, 1)[0]
		*accounted = acct.growth
		threshold := d.m.analyses[ri].threshold
		var members *synchrony
		if acct.miss > 0 && best.marker >= 0 && best.coll != NoCollective && best.ok {
			members = d.m.memberAccounting(onset.Collective)
		}
		// The communicator's record counts co-timed transient changes only.
		cotimed := NoCollective
		if onset != nil && best.ok && !ep.persistent {
			cotimed = onset.Collective
		}
		silent := members != nil && members.accountCovers == 0 && members.accountPartial == 0
		switch {
		case acct.covers(ep, threshold):
			codes = append(codes, ReasonAccountingCovers)
			class, conf = attribution.CollectiveConfirmed, 0.95
			d.note(cotimed, outcomeConfirmed, ep.excess, d.m.analyses[ri].weakLevel)
		case acct.growth >= threshold:
			codes = append(codes, ReasonAccountingPartial)
			class, conf = attribution.CollectiveLikely, 0.7
		case acct.miss == 0:
			codes = append(codes, ReasonAccountingUncovered)
			class, conf = attribution.CollectiveSuspect, 0.25
			d.note(cotimed, outcomeDenied, ep.excess, d.m.analyses[ri].weakLevel)
		case members != nil && members.accountCovers > members.accountDeny:
			codes = append(codes, ReasonAccountingUnsampled, ReasonAccountingMembersCover)
			class, conf = attribution.CollectiveConfirmed, 0.9
			d.note(cotimed, outcomeConfirmed, ep.excess, d.m.analyses[ri].weakLevel)
		case silent && members.accountMissAll <= accountingMissLimit:
			codes = append(codes, ReasonAccountingUnsampled, ReasonAccountingMembersUncovered)
			class, conf = attribution.CollectiveSuspect, 0.25
			d.note(cotimed, outcomeDenied, ep.excess, d.m.analyses[ri].weakLevel)
		case acct.miss <= accountingMissLimit:
			codes = append(codes, ReasonAccountingUncovered)
			class, conf = attribution.CollectiveSuspect, 0.25
			d.note(cotimed, outcomeDenied, ep.excess, d.m.analyses[ri].weakLevel)
		case silent && cotimed != NoCollective && d.records != nil &&
			d.records[comm].leansNot(changeSize{ep.excess, d.m.analyses[ri].weakLevel}):
			codes = append(codes, ReasonAccountingUnsampled, ReasonAccountingCommUncovered)
			class, conf = attribution.CollectiveSuspect, 0.3
		case silent && cotimed != NoCollective && d.records != nil && d.records[comm].checked == 0 &&
			d.flatOdds(cotimed)*members.accountMissAll <= accountingMissLimit:
			// A communicator with no decided co-timed change: rule 4 with
			// its record of like ops as the prior odds in place of even
			// ones (evidence-mode §2.3 rule 7).
			codes = append(codes, ReasonAccountingUnsampled, ReasonAccountingCommUncovered)
			class, conf = attribution.CollectiveSuspect, 0.3
		default:
			codes = append(codes, ReasonAccountingUnsampled)
			d.unchecked = silent && cotimed != NoCollective && d.records == nil
		}
		if decided := codes[len(codes)-1] != ReasonAccountingUnsampled; decided {
			// The honesty rule held the timing's verdict to likely for
			// want of accounting; the accounting has spoken instead.
			codes = slices.DeleteFunc(codes, func(c string) bool { return c == ReasonCotimedOnly })
		}
	}

	if ep.early && class != attribution.CollectiveConfident && class != attribution.CollectiveConfirmed {
		// A level change in the rank's first samples that no first use of a
		// communicator explains: the job's start, not NCCL.
		return false
	}
	conf = roundTo(conf, 3)
	if !(conf >= cfg.MinConfidence) {
		return false
	}
	// The change's first and last high samples' times are riseHi and
	// fallLo, and its peak's gap is kept in it: the rank's columns are not
	// read again here.
	pad := cfg.IntervalPaddingNs
	// The change began in (riseLo, riseHi]: a rank sampled every second or
	// more knows its onset only to within that interval, and the claim
	// covers all of it (evidence-mode §7.6).
	riseLo, onsetHi := ep.riseLo, ep.fallLo
	if polled && best.ok && (ep.persistent || best.live) {
		riseLo, onsetHi = d.onsetWithin(ep, &rd.Markers[best.marker], ep.riseHi)
	}
	start := max(0, d.in.TraceStartNs, min(satSub(ep.riseHi, pad), riseLo))
	if start <= rd.DeviceWideThroughNs {
		codes = append(codes, ReasonDeviceWideMemory)
	}
	kept := d.codeSet(codes)
	end := uint64(onsetHi) + uint64(pad)
	gap := ep.gap
	*r = attribution.Result{
		Rank:            rd.Rank,
		IntervalStartNs: start,
		IntervalEndNs:   end,
		Classification:  class,
		Confidence:      conf,
		ReasonCodes:     kept,
		Evidence: attribution.Evidence{
			MarkerHits:        int64(markersIn(rd.Markers, d.m.maxDur[ri], start, int64(min(end, math.MaxInt64)))),
			SynchronizedRanks: synced,
			ExpectedWorldSize: d.in.ExpectedWorldSize,
			SynchronyRatio:    roundTo(ratio, 4),
			PeakGapBytes:      gap,
			RobustZscore:      roundTo(ep.zscore, 4),
		},
		Mode:               attribution.ModeEvidence,
		Kind:               kind,
		ExcessBytes:        ep.excess,
		NCCLAccountedBytes: accounted,
	}
	if total := rd.Samples.TotalBytes[ep.peak]; total > 0 {
		ratio := &take(&d.ratios, 1)[0]
		*ratio = roundTo(float64(gap)/float64(total), 6)
		r.Evidence.PeakGapRatio = ratio
	}
	if best.marker >= 0 {
		r.MarkerTimesNs = take(&d.ints, 1)
		r.MarkerTimesNs[0] = rd.Markers[best.marker].StartNs
	}
	if best.marker >= 0 && best.coll != NoCollective {
		r.Collective = d.collectiveMatch(best.coll)
	}
	return true
}

// maxCodeSets is how many distinct sets of reason codes a decider shares
// among its results; a job's results carry a handful.
const maxCodeSets = 16

// codeSet is codes sorted, as a slice of d.codes that results with the
// same codes share (read-only, as the reference mode's results share
// theirs): thousands of results a round carry a few sets of codes, most
// of them gathered in the same order, so a set is found by the codes as
// gathered and sorted only when new.
func (d *decider) codeSet(codes []string) []string {
	for i := len(d.codeSets) - 1; i >= 0; i-- {
		if set := &d.codeSets[i]; slices.Equal(set.gathered, codes) {
			return set.sorted
		}
	}
	sorted := take(&d.codes, len(codes))
	sortCodesInto(sorted, codes)
	if len(d.codeSets) < maxCodeSets {
		gathered := take(&d.codes, len(codes))
		copy(gathered, codes)
		d.codeSets = append(d.codeSets, codeSet{gathered: gathered, sorted: sorted})
	}
	return sorted
}

// codeSet is a set of reason codes as a change's decision gathered them
// and sorted.
type codeSet struct{ gathered, sorted []string }

// sortCodesInto writes a result's few reason codes (maxReasonCodes at
// most) to dst in order, as slices.Sort would order them. Every result of
// a round sorts its codes: they are told apart by their first eight bytes
// (codePrefix) and compared whole only where those are equal, and sorted
// by index, so that each code is written once.
func sortCodesInto(dst, codes []string) {
	var keys [maxReasonCodes]uint64
	var order [maxReasonCodes]uint8
	if len(codes) > len(keys) {
		copy(dst, codes)
		slices.Sort(dst[:len(codes)])
		return
	}
	for i, c := range codes {
		keys[i], order[i] = codePrefix(c), uint8(i)
	}
	for i := 1; i < len(codes); i++ {
		for j := i; j > 0 && (keys[j] < keys[j-1] || keys[j] == keys[j-1] && codes[order[j]] < codes[order[j-1]]); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	for i := range codes {
		dst[i] = codes[order[i]]
	}
}

// codePrefix is the first eight bytes of c as a big-endian number, padded
// with zeros: codes whose prefixes differ are in the order of their
// prefixes, as strings are.
func codePrefix(c string) uint64 {
	if len(c) >= 8 {
		return uint64(c[0])<<56 | uint64(c[1])<<48 | uint64(c[2])<<40 | uint64(c[3])<<32 |
			uint64(c[4])<<24 | uint64(c[5])<<16 | uint64(c[6])<<8 | uint64(c[7])
	}
	var k uint64
	for i := range 8 {
		k <<= 8
		if i < len(c) {
			k |= uint64(c[i])
		}
	}
	return k
}

// onsetWithin narrows where change ep, synchronized at marker mk, began:
// NCCL allocates (or frees, for a release) a collective's buffers while the
// op runs, so the onset lies in the op's interval as well as in the rise
// gap. A rank polled every second or more otherwise claims seconds before
// its first high sample (evidence-mode §7.6). It returns the start of the
// claim before padding, and its end: a transient's last high sample, a
// step's onset (its first high sample) or, when that came after the op,
// the op's end, still after the sample before the step.
func (d *decider) onsetWithin(ep *episode, mk *Marker, firstHigh int64) (riseLo, onsetHi int64) {
	pad := d.cfg.IntervalPaddingNs
	riseLo = max(ep.riseLo, satSub(mk.StartNs, pad))
	onsetHi = ep.fallLo // the last high sample's time
	if ep.persistent && mk.EndNs > mk.StartNs {
		onsetHi = min(firstHigh, max(mk.EndNs, ep.riseLo+1))
	}
	return riseLo, onsetHi
}

// accountingCovers reports whether NCCL's accounting of marker mk's
// communicator on rank ri covers change ep: a change that outlasts its
// collective is still that collective's when NCCL says its memory grew by
// it (evidence-mode §7.3).
func (d *decider) accountingCovers(ri int32, ep *episode, mk *Marker) bool {
	if mk.Collective == NoCollective {
		return false
	}
	comm := CanonicalCommID(d.in.Collectives[mk.Collective].CommID)
	v := d.m.accountingOf(ri, ep, comm, mk)
	return v.present && !v.untracked && v.covers(ep, d.m.analyses[ri].threshold)
}

// liveOp is the candidate marker of rank ri for transient change ep of
// collective c's communicator whose op was still running when the change
// was first seen, launched in its rise gap (the latest such), or -1.
func (d *decider) liveOp(ri int32, ep *episode, c int32) int32 {
	if ep.persistent {
		return -1
	}
	rd := &d.in.Ranks[ri]
	comm := d.in.Collectives[c].CommID
	live := int32(-1)
	d.m.candidates(ri, ep, func(mi int32) {
		mk := &rd.Markers[mi]
		if mk.Collective == NoCollective || mk.Approximate || d.in.Collectives[mk.Collective].CommID != comm {
			return
		}
		if mk.StartNs > ep.riseLo && mk.StartNs <= ep.riseHi && satAdd(mk.EndNs, d.m.tolerance(mk).after) >= ep.riseHi &&
			(live < 0 || mk.StartNs > rd.Markers[live].StartNs) {
			live = mi
		}
	})
	return live
}

// outlastFactor is how many times its collective's interval (at least the
// match tolerance) a change may surely last and still be that collective's:
// NCCL frees or keeps an op's buffers when the op ends, while another
// tenant's context stays for seconds (evidence-mode §7.3).
const outlastFactor = 5

// outlasts reports whether transient change ep was surely under way for
// more than outlastFactor times marker mk's interval (when mk has one).
func (d *decider) outlasts(ep *episode, mk *Marker) bool {
	if ep.persistent || mk.EndNs <= mk.StartNs {
		return false // a bare timestamp says nothing of how long its op ran
	}
	dur := max(mk.EndNs-mk.StartNs, d.cfg.Evidence.MatchToleranceNs)
	return ep.fallLo-ep.riseHi > satMul(outlastFactor, dur)
}

// releases reports whether marker mi of rank ri is the last of its
// communicator there and step down ep came at its end: NCCL freed the
// communicator's buffers (ncclCommAbort after a hang, or its destruction).
func (d *decider) releases(ri, mi int32, ep *episode) bool {
	mk := &d.in.Ranks[ri].Markers[mi]
	if mk.Collective == NoCollective || !d.m.lastUse[ri][mi] {
		return false
	}
	tol := d.cfg.Evidence.MatchToleranceNs
	return satSub(mk.EndNs, tol) <= ep.riseHi && satAdd(mk.EndNs, tol) > ep.riseLo
}

// newProcess reports whether ep began within a baseline span of the start
// of a later session of its rank (a restarted process).
func (d *decider) newProcess(rd *RankData, ep *episode) bool {
	s := &rd.Samples
	if s.Session == nil {
		return false
	}
	span := baselineSpan(&d.cfg.Evidence, d.m.analyses[ep.rank].interval)
	for i := ep.first; i > 0 && s.TimesNs[i] >= satSub(s.TimesNs[ep.first], span); i-- {
		if s.Session[i] != s.Session[i-1] {
			return true
		}
	}
	return false
}

// collectiveMatch is collective c's match, built once per evaluation and
// shared by every result that matched c.
func (d *decider) collectiveMatch(c int32) *attribution.CollectiveMatch {
	if out := d.matches[c]; out != nil {
		return out
	}
	coll := &d.in.Collectives[c]
	members := d.m.members[c]
	sync := d.m.synchronyOf(c)
	out := &attribution.CollectiveMatch{
		CommID:                coll.CommID,
		Op:                    coll.Op,
		Seq:                   coll.Seq,
		CommRanks:             max(coll.NRanks, int64(len(coll.Ranks)), int64(len(members))),
		SynchronizedCommRanks: int64(sync.synced),
		Members:               make([]attribution.MemberMarker, len(members)),
	}
	for i, ref := range members {
		mk := &d.in.Ranks[ref.rank].Markers[ref.marker]
		out.Members[i] = attribution.MemberMarker{
			Rank: d.in.Ranks[ref.rank].Rank, StartNs: mk.StartNs, EndNs: mk.EndNs,
			Synchronized: sync.episode[i] >= 0,
		}
	}
	d.matches[c] = out
	return out
}

// markersIn counts the markers whose interval meets [start, end]; no
// marker lasts longer than maxDur.
func markersIn(markers []Marker, maxDur, start, end int64) int {
	first := firstStartingAt(markers, satSub(start, maxDur))
	n := 0
	for i := first; i < len(markers); i++ {
		if markers[i].StartNs > end {
			break
		}
		if markers[i].EndNs >= start {
			n++
		}
	}
	return n
}

func roundTo(x float64, digits int) float64 {
	p := powersOf10[digits]
	return math.Round(x*p) / p
}

// powersOf10 are math.Pow(10, digits) for the digits results are rounded
// to, exactly (powers of 10 up to 10^22 are exact in a float64).
var powersOf10 = [...]float64{1, 10, 100, 1e3, 1e4, 1e5, 1e6}
