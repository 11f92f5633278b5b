package attribution

import (
	"cmp"
	"math"
	"slices"

	"github.com/collectiveattr/collectiveattr/phase"
)

// Scoring weights and penalties (§2.3 S8).
const (
	markerWeight     = 0.34
	synchronyWeight  = 0.34
	zscoreWeight     = 0.16
	divergenceWeight = 0.16
	noMarkerPenalty  = 0.15
	singleRankPenal  = 0.15
	noTotalPenalty   = 0.05
)

// spike is a candidate sample (the reference's _RankSpike).
type spike struct {
	rank      int64
	rankIdx   int32
	ts        int64
	session   string
	gap       int64
	ratio     float64
	hasRatio  bool
	zRounded  float64
	markers   []int64 // sub-slice of the rank's markers (not retained)
	syncCount int64
}

// resultsOfSpikes is S5–S12 on the spikes detected in a run of ranks
// series (AttributeColumnsParallel).
func resultsOfSpikes(spikes []spike, ranks int, ews, traceStartNs int64, cfg Config, resolver PhaseResolver) []Result {
	markSynchrony(spikes, cfg.SynchronyWindowNs, ranks)
	totalMarkers := 0
	for i := range spikes {
		totalMarkers += len(spikes[i].markers)
	}
	markerArena := make([]int64, 0, totalMarkers)
	// The synchrony ratio depends only on the count: round each count once.
	syncRounded := map[int64]float64{}
	roundedSync := func(count int64) float64 {
		v, ok := syncRounded[count]
		if !ok {
			v = pyRound(synchronyRatio(count, ews), 4)
			syncRounded[count] = v
		}
		return v
	}
	confRound, ratioRound := roundMemo{n: 3}, roundMemo{n: 6}
	results := make([]Result, 0, len(spikes))
	ratios := make([]float64, 0, len(spikes)) // backing store for PeakGapRatio
	masks := make([]uint8, 0, len(spikes))
	for i := range spikes {
		sp := &spikes[i]
		conf, mask, ok := score(sp, ews, cfg)
		if !ok {
			continue
		}
		rounded := confRound.round(conf)
		if !(rounded >= cfg.MinConfidence) {
			continue
		}
		start, end := interval(sp, traceStartNs, cfg.IntervalPaddingNs)
		n := len(markerArena)
		markerArena = append(markerArena, sp.markers...)
		r := Result{
			Rank:            sp.rank,
			IntervalStartNs: start,
			IntervalEndNs:   end,
			Classification:  classify(conf),
			Confidence:      rounded,
			ReasonCodes:     reasonCodeSets[mask],
			Evidence: Evidence{
				MarkerHits:        int64(len(sp.markers)),
				SynchronizedRanks: sp.syncCount,
				ExpectedWorldSize: ews,
				SynchronyRatio:    roundedSync(sp.syncCount),
				PeakGapBytes:      sp.gap,
				RobustZscore:      sp.zRounded, // round(round(z, 4), 4) == round(z, 4)
			},
			MarkerTimesNs: markerArena[n:len(markerArena):len(markerArena)],
		}
		if sp.hasRatio {
			ratios = append(ratios, ratioRound.round(sp.ratio))
			r.Evidence.PeakGapRatio = &ratios[len(ratios)-1]
		}
		if resolver != nil && sp.session != "" {
			r.PhaseAttribution = resolver.Resolve(sp.ts, sp.session, sp.rank)
		}
		results = append(results, r)
		masks = append(masks, mask)
	}
	return mergeRankIntervals(results, masks)
}

func rankID(ids map[int64]int32, rank int64) int32 {
	id, ok := ids[rank]
	if !ok {
		id = int32(len(ids))
		ids[rank] = id
	}
	return id
}

// markersNear returns the sorted markers m with |m - t| <= window (inclusive)
// by binary search.
func markersNear(markers []int64, t, window int64) []int64 {
	lo := satSub(t, window)
	hi := satAdd(t, window)
	i, _ := slices.BinarySearch(markers, lo)
	j := i
	for j < len(markers) && markers[j] <= hi {
		j++
	}
	return markers[i:j]
}

// markSynchrony is S7: for each spike, the number of distinct ranks with a
// spike within ±window (inclusive), itself included. Spikes are visited in
// time order with a sliding window and a per-rank count, so the whole pass
// is O(S log S) for the sort plus O(S).
func markSynchrony(spikes []spike, window int64, ranks int) {
	order := make([]int32, len(spikes))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(spikes[a].ts, spikes[b].ts) })
	counts := make([]int32, ranks)
	distinct := int64(0)
	lo, hi := 0, 0
	for _, oi := range order {
		t := spikes[oi].ts
		for hi < len(order) && spikes[order[hi]].ts <= satAdd(t, window) {
			r := spikes[order[hi]].rankIdx
			if counts[r] == 0 {
				distinct++
			}
			counts[r]++
			hi++
		}
		for spikes[order[lo]].ts < satSub(t, window) {
			r := spikes[order[lo]].rankIdx
			counts[r]--
			if counts[r] == 0 {
				distinct--
			}
			lo++
		}
		spikes[oi].syncCount = max(distinct, 1)
	}
}

func synchronyRatio(count, ews int64) float64 {
	if ews <= 1 {
		return 0
	}
	return min(1.0, pyDiv(count-1, ews-1))
}

// Reason code bits, in byte-wise sorted order of the codes.
const (
	rcDivergence = 1 << iota
	rcSynchrony
	rcOutlier
	rcMarkerToken
	rcMarkerOverlap
	rcSingleRank
	rcWeakMarker
)

// ReasonCodes is the closed set of reason codes, sorted.
var ReasonCodes = []string{
	"allocator_device_divergence",
	"cross_rank_synchrony",
	"gap_spike_statistical_outlier",
	"marker_collective_token",
	"marker_spike_overlap",
	"single_rank_only",
	"weak_marker_signal",
}

// reasonCodeSets[mask] is the sorted code list for a bit mask; results share
// these read-only slices instead of allocating their own.
var reasonCodeSets = func() [1 << 7][]string {
	var t [1 << 7][]string
	for m := range t {
		var codes []string
		for b, c := range ReasonCodes {
			if m&(1<<b) != 0 {
				codes = append(codes, c)
			}
		}
		t[m] = codes[:len(codes):len(codes)]
	}
	return t
}()

// score is S8: the clamped, unrounded confidence and the reason code mask;
// ok is false when the spike scores <= 0 and is dropped. Every product is
// converted explicitly so the compiler cannot fuse it into the following add
// (Go allows FMA otherwise), keeping the reference's rounding steps.
func score(sp *spike, ews int64, cfg Config) (float64, uint8, bool) {
	sync := synchronyRatio(sp.syncCount, ews)
	zs := min(1.0, sp.zRounded/cfg.RobustZscoreThreshold)
	bytesS := 1.0
	switch {
	case cfg.minGapBytesDivisor > 0:
		bytesS = min(1.0, float64(sp.gap)/cfg.minGapBytesDivisor)
	case cfg.MinGapBytes > 0:
		bytesS = min(1.0, pyDiv(sp.gap, cfg.MinGapBytes))
	}
	ratioS := 1.0
	if cfg.MinGapRatio > 0 {
		ratio := 0.0
		if sp.hasRatio {
			ratio = sp.ratio
		}
		ratioS = min(1.0, ratio/cfg.MinGapRatio)
	}
	div := max(bytesS, ratioS)

	marker := len(sp.markers) > 0
	conf := 0.0
	if marker {
		conf += markerWeight
	}
	conf += float64(synchronyWeight * sync)
	conf += float64(zscoreWeight * zs)
	conf += float64(divergenceWeight * div)

	mask := uint8(rcOutlier)
	if marker {
		mask |= rcMarkerToken | rcMarkerOverlap
	} else {
		conf -= noMarkerPenalty
		mask |= rcWeakMarker
	}
	if sync >= cfg.MinSynchronyRatio {
		mask |= rcSynchrony
	}
	if div >= 0.5 {
		mask |= rcDivergence
	}
	if ews <= 1 || sp.syncCount <= 1 {
		conf -= singleRankPenal
		mask |= rcSingleRank
	}
	if !sp.hasRatio {
		conf -= noTotalPenalty
	}
	conf = positive(min(1.0, conf))
	return conf, mask, conf > 0
}

// interval is S9: markers and spike time padded; the start clamped at 0 and
// the trace start, the end never clamped. Times and the padding are never
// negative, so the end's sum is exact in a uint64.
func interval(sp *spike, traceStart, padding int64) (int64, uint64) {
	mStart, mEnd := sp.ts, sp.ts
	if len(sp.markers) > 0 {
		mStart, mEnd = sp.markers[0], sp.markers[len(sp.markers)-1]
	}
	start := max(0, traceStart, satSub(min(mStart, sp.ts), padding))
	end := uint64(max(mEnd, sp.ts)) + uint64(padding)
	return start, end
}

// classify is S10, on the unrounded confidence.
func classify(conf float64) string {
	switch {
	case conf >= 0.8:
		return CollectiveConfident
	case conf >= 0.6:
		return CollectiveLikely
	}
	return CollectiveSuspect
}

// mergeRankIntervals is S12: stable sort by (rank, start), then fold each
// result into the previous one of the same rank when its start is <= the
// previous end (touching intervals merge).
func mergeRankIntervals(results []Result, masks []uint8) []Result {
	if len(results) == 0 {
		return nil
	}
	order := make([]int, len(results))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(results[a].Rank, results[b].Rank),
			cmp.Compare(results[a].IntervalStartNs, results[b].IntervalStartNs))
	})
	out := make([]Result, 0, len(results))
	var prevMask uint8
	for _, i := range order {
		cur := results[i]
		if len(out) == 0 {
			out = append(out, cur)
			prevMask = masks[i]
			continue
		}
		prev := &out[len(out)-1]
		if prev.Rank != cur.Rank || uint64(cur.IntervalStartNs) > prev.IntervalEndNs {
			out = append(out, cur)
			prevMask = masks[i]
			continue
		}
		prev.IntervalStartNs = min(prev.IntervalStartNs, cur.IntervalStartNs)
		prev.IntervalEndNs = max(prev.IntervalEndNs, cur.IntervalEndNs)
		if ClassificationRank(cur.Classification) > ClassificationRank(prev.Classification) {
			prev.Classification = cur.Classification
		}
		prev.Confidence = pyMax(prev.Confidence, cur.Confidence)
		prevMask |= masks[i]
		prev.ReasonCodes = reasonCodeSets[prevMask]
		prev.Evidence = mergeEvidence(prev.Evidence, cur.Evidence)
		prev.PhaseAttribution = phase.Merge(prev.PhaseAttribution, cur.PhaseAttribution)
		prev.MarkerTimesNs = unionSorted(prev.MarkerTimesNs, cur.MarkerTimesNs)
	}
	return out
}

// pyMax is Python's max(a, b): a unless b is greater.
func pyMax(a, b float64) float64 {
	if b > a {
		return b
	}
	return a
}

// mergeEvidence is the field-wise maximum; peak_gap_ratio ignores null.
func mergeEvidence(a, b Evidence) Evidence {
	out := Evidence{
		MarkerHits:        max(a.MarkerHits, b.MarkerHits),
		SynchronizedRanks: max(a.SynchronizedRanks, b.SynchronizedRanks),
		ExpectedWorldSize: max(a.ExpectedWorldSize, b.ExpectedWorldSize),
		SynchronyRatio:    pyMax(a.SynchronyRatio, b.SynchronyRatio),
		PeakGapBytes:      max(a.PeakGapBytes, b.PeakGapBytes),
		PeakGapRatio:      a.PeakGapRatio,
		RobustZscore:      pyMax(a.RobustZscore, b.RobustZscore),
	}
	switch {
	case a.PeakGapRatio == nil:
		out.PeakGapRatio = b.PeakGapRatio
	case b.PeakGapRatio != nil && *b.PeakGapRatio > *a.PeakGapRatio:
		out.PeakGapRatio = b.PeakGapRatio
	}
	return out
}

// unionSorted merges two ascending lists into a new ascending list without
// duplicates (a marker shared by two merged spikes is listed once).
func unionSorted(a, b []int64) []int64 {
	out := make([]int64, 0, len(a)+len(b))
	i, j := 0, 0
	push := func(v int64) {
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	for i < len(a) && j < len(b) {
		if a[i] <= b[j] {
			push(a[i])
			i++
		} else {
			push(b[j])
			j++
		}
	}
	for ; i < len(a); i++ {
		push(a[i])
	}
	for ; j < len(b); j++ {
		push(b[j])
	}
	return out
}

func satAdd(a, b int64) int64 {
	s := a + b
	if b > 0 && s < a {
		return math.MaxInt64
	}
	if b < 0 && s > a {
		return math.MinInt64
	}
	return s
}

func satSub(a, b int64) int64 {
	s := a - b
	if b > 0 && s > a {
		return math.MinInt64
	}
	if b < 0 && s < a {
		return math.MaxInt64
	}
	return s
}
