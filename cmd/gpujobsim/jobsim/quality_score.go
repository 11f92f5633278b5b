package jobsim

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"time"
)

// Classifications the quality scorer distinguishes. Any other value (a mode may add
// classes) counts as a claim.
const (
	ClassSuspect   = "collective_suspect"
	ClassLikely    = "collective_likely"
	ClassConfident = "collective_confident"
	ClassConfirmed = "collective_confirmed"
)

// Result kinds of evidence mode; a mode without kinds leaves Kind empty.
const (
	ResultTransient  = "transient"
	ResultPersistent = "persistent"
)

// QualityResult is one attribution result reduced to what the matching rules read.
type QualityResult struct {
	Rank           int64
	StartNs, EndNs int64
	Classification string
	Confidence     float64
	Kind           string
}

func (r QualityResult) claim() bool { return r.Classification != ClassSuspect }

func (r QualityResult) confident() bool {
	return r.Classification == ClassConfident || r.Classification == ClassConfirmed
}

// QualityScore counts how a mode's results match a case's truth. Scores of several cases
// add up (Add); the ratios are then micro averages over the cases.
//
// Matching (the shared benchmark's rules): a claim is a result not classified suspect;
// it is a true positive when its interval overlaps (inclusive) a true collective episode
// of its rank, a persistent one only in its first PersistentRecallWindow; otherwise a
// false positive, typed decoy (it overlaps a decoy of the rank), level (it lies on a
// true persistent level away from its onset) or no truth. An episode is found when a
// claim of its rank overlaps its window.
type QualityScore struct {
	Cases    int
	Results  int
	Claims   int
	Suspects int
	TP, FP   int
	// FPDecoy, FPLevel and FPNoTruth type the false positives.
	FPDecoy, FPLevel, FPNoTruth int
	// ConfidentClaims are claims classified confident or confirmed, ConfidentTP the true
	// ones among them.
	ConfidentClaims, ConfidentTP int
	// Episodes are true (episode, rank) pairs, Found those a claim overlaps, NotSampled
	// those no sample saw; FoundConfirmed those found by a confirmed claim.
	Episodes, Found, NotSampled, FoundConfirmed int
	// FoundSampled are the found episodes some sample saw (Episodes − NotSampled of
	// them in all).
	FoundSampled int
	// Decoys are decoy (episode, rank) pairs, DecoysClaimed those a claim overlaps,
	// DecoysConfident those a confident or confirmed result overlaps.
	Decoys, DecoysClaimed, DecoysConfident int
	// LevelDecoysConfident are decoys of a level change that is not NCCL's (a restarted
	// process, another tenant: LevelChangeDecoyKinds) overlapped by a confident or
	// confirmed result.
	LevelDecoysConfident int
	// PersistentEpisodes are true step onsets (per rank), StepsFound those found inside
	// their recall window, StepKindRight those found by a claim of kind persistent.
	PersistentEpisodes, StepsFound, StepKindRight int
	// PersistentClaimsOffStep are persistent claims at no true step onset of their rank.
	PersistentClaimsOffStep int
	// HasKind is true when some result carried a kind.
	HasKind bool
	// SampledNs is the sampled time of every rank, summed; FlaggedShare the sum over
	// cases of the mean share of a rank's sampled time inside a claim.
	SampledNs    int64
	FlaggedShare float64
}

// Add sums b into s.
func (s *QualityScore) Add(b QualityScore) {
	s.Cases += b.Cases
	s.Results += b.Results
	s.Claims += b.Claims
	s.Suspects += b.Suspects
	s.TP += b.TP
	s.FP += b.FP
	s.FPDecoy += b.FPDecoy
	s.FPLevel += b.FPLevel
	s.FPNoTruth += b.FPNoTruth
	s.ConfidentClaims += b.ConfidentClaims
	s.ConfidentTP += b.ConfidentTP
	s.Episodes += b.Episodes
	s.Found += b.Found
	s.NotSampled += b.NotSampled
	s.FoundConfirmed += b.FoundConfirmed
	s.FoundSampled += b.FoundSampled
	s.LevelDecoysConfident += b.LevelDecoysConfident
	s.Decoys += b.Decoys
	s.DecoysClaimed += b.DecoysClaimed
	s.DecoysConfident += b.DecoysConfident
	s.PersistentEpisodes += b.PersistentEpisodes
	s.StepsFound += b.StepsFound
	s.StepKindRight += b.StepKindRight
	s.PersistentClaimsOffStep += b.PersistentClaimsOffStep
	s.HasKind = s.HasKind || b.HasKind
	s.SampledNs += b.SampledNs
	s.FlaggedShare += b.FlaggedShare
}

// Ratio is a measure that may be undefined (nothing to divide by).
type Ratio struct {
	Value   float64
	Defined bool
}

func ratio(a, b int) Ratio {
	if b == 0 {
		return Ratio{}
	}
	return Ratio{Value: float64(a) / float64(b), Defined: true}
}

// RecallSampled is found rank-episodes over those some sample saw: what sampling
// never showed no mode can find.
func (s QualityScore) RecallSampled() Ratio { return ratio(s.FoundSampled, s.Episodes-s.NotSampled) }

// LevelChangeDecoyKinds are the decoy kinds of a level change that is not NCCL's,
// which no result may call confident.
var LevelChangeDecoyKinds = []string{KindRestartLevel, KindRestartLinger, KindOtherTenant}

// Precision is true claims over claims.
func (s QualityScore) Precision() Ratio { return ratio(s.TP, s.Claims) }

// Recall is true rank-episodes found over all of them.
func (s QualityScore) Recall() Ratio { return ratio(s.Found, s.Episodes) }

// ConfidentPrecision is true confident-or-confirmed results over all of them.
func (s QualityScore) ConfidentPrecision() Ratio { return ratio(s.ConfidentTP, s.ConfidentClaims) }

// DecoysConfidentShare is the share of decoy rank-episodes called confident.
func (s QualityScore) DecoysConfidentShare() Ratio { return ratio(s.DecoysConfident, s.Decoys) }

// ConfirmedShare is the share of found true rank-episodes found by a confirmed claim.
func (s QualityScore) ConfirmedShare() Ratio { return ratio(s.FoundConfirmed, s.Found) }

// StepRecall is the share of step onsets found within their recall window.
func (s QualityScore) StepRecall() Ratio { return ratio(s.StepsFound, s.PersistentEpisodes) }

// StepKindShare is the share of found steps found by a claim of kind persistent.
func (s QualityScore) StepKindShare() Ratio { return ratio(s.StepKindRight, s.StepsFound) }

// ClaimsPerRankHour is the claim rate over the sampled time of every rank.
func (s QualityScore) ClaimsPerRankHour() Ratio {
	if s.SampledNs <= 0 {
		return Ratio{}
	}
	return Ratio{Value: float64(s.Claims) / (float64(s.SampledNs) / float64(time.Hour)), Defined: true}
}

// Flagged is the mean share of a rank's sampled time inside a claim.
func (s QualityScore) Flagged() Ratio {
	if s.Cases == 0 {
		return Ratio{}
	}
	return Ratio{Value: s.FlaggedShare / float64(s.Cases), Defined: true}
}

func overlaps(a0, a1, b0, b1 int64) bool { return a0 <= b1 && a1 >= b0 }

// ScoreQuality scores one case's results against its truth.
func ScoreQuality(t QualityTruth, results []QualityResult) QualityScore {
	s := QualityScore{Cases: 1, Results: len(results), Episodes: len(t.Collective), Decoys: len(t.Decoys)}
	truthOf := map[int][]QualityEpisode{}
	for _, e := range t.Collective {
		truthOf[e.Rank] = append(truthOf[e.Rank], e)
	}
	decoysOf := map[int][]QualityEpisode{}
	for _, e := range t.Decoys {
		decoysOf[e.Rank] = append(decoysOf[e.Rank], e)
	}
	claimsOf := map[int][]QualityResult{}
	resultsOf := map[int][]QualityResult{}
	for _, r := range results {
		s.HasKind = s.HasKind || r.Kind != ""
		resultsOf[int(r.Rank)] = append(resultsOf[int(r.Rank)], r)
		if !r.claim() {
			s.Suspects++
			continue
		}
		s.Claims++
		claimsOf[int(r.Rank)] = append(claimsOf[int(r.Rank)], r)
		if r.confident() {
			s.ConfidentClaims++
		}
	}
	hits := func(rs []QualityResult, e QualityEpisode, pred func(QualityResult) bool) bool {
		a, b := e.Window()
		return slices.ContainsFunc(rs, func(r QualityResult) bool { return overlaps(r.StartNs, r.EndNs, a, b) && pred(r) })
	}
	anyResult := func(QualityResult) bool { return true }

	for rank, claims := range claimsOf {
		for _, r := range claims {
			onWindow := func(e QualityEpisode) bool {
				a, b := e.Window()
				return overlaps(r.StartNs, r.EndNs, a, b)
			}
			if r.Kind == ResultPersistent && !slices.ContainsFunc(truthOf[rank], func(e QualityEpisode) bool { return e.Persistent && onWindow(e) }) {
				s.PersistentClaimsOffStep++
			}
			switch {
			case slices.ContainsFunc(truthOf[rank], onWindow):
				s.TP++
				if r.confident() {
					s.ConfidentTP++
				}
			case slices.ContainsFunc(decoysOf[rank], onWindow):
				s.FP++
				s.FPDecoy++
			case slices.ContainsFunc(truthOf[rank], func(e QualityEpisode) bool {
				return e.Persistent && overlaps(r.StartNs, r.EndNs, e.StartNs, e.EndNs)
			}):
				s.FP++
				s.FPLevel++
			default:
				s.FP++
				s.FPNoTruth++
			}
		}
	}
	for _, e := range t.Collective {
		if e.SamplesObserved == 0 {
			s.NotSampled++
		}
		if e.Persistent {
			s.PersistentEpisodes++
		}
		claims := claimsOf[e.Rank]
		if !hits(claims, e, anyResult) {
			continue
		}
		s.Found++
		if e.SamplesObserved > 0 {
			s.FoundSampled++
		}
		if hits(claims, e, func(r QualityResult) bool { return r.Classification == ClassConfirmed }) {
			s.FoundConfirmed++
		}
		if e.Persistent {
			s.StepsFound++
			if hits(claims, e, func(r QualityResult) bool { return r.Kind == ResultPersistent }) {
				s.StepKindRight++
			}
		}
	}
	for _, e := range t.Decoys {
		if hits(claimsOf[e.Rank], e, anyResult) {
			s.DecoysClaimed++
		}
		if hits(resultsOf[e.Rank], e, QualityResult.confident) {
			s.DecoysConfident++
			if slices.Contains(LevelChangeDecoyKinds, e.Kind) {
				s.LevelDecoysConfident++
			}
		}
	}
	// In rank order, so the float sum does not depend on map order.
	keys := slices.SortedFunc(maps.Keys(t.Ranks), func(a, b string) int {
		return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
	})
	var flagged float64
	for _, key := range keys {
		info := t.Ranks[key]
		lo, hi := info.FirstSampleNs, info.LastSampleNs
		s.SampledNs += hi - lo
		var spans [][2]int64
		rank, err := strconv.Atoi(key)
		if err != nil {
			continue // not a rank: nothing of it can be flagged
		}
		for _, r := range claimsOf[rank] {
			spans = append(spans, [2]int64{r.StartNs, r.EndNs})
		}
		flagged += float64(unionLength(spans, lo, hi)) / float64(max(1, hi-lo))
	}
	if len(t.Ranks) > 0 {
		s.FlaggedShare = flagged / float64(len(t.Ranks))
	}
	return s
}

// unionLength is the length of the union of spans clipped to [lo, hi].
func unionLength(spans [][2]int64, lo, hi int64) int64 {
	var segs [][2]int64
	for _, s := range spans {
		if s[1] >= lo && s[0] <= hi {
			segs = append(segs, [2]int64{max(s[0], lo), min(s[1], hi)})
		}
	}
	slices.SortFunc(segs, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var total int64
	var cur [2]int64
	open := false
	for _, s := range segs {
		switch {
		case !open:
			cur, open = s, true
		case s[0] > cur[1]:
			total += cur[1] - cur[0]
			cur = s
		default:
			cur[1] = max(cur[1], s[1])
		}
	}
	if open {
		total += cur[1] - cur[0]
	}
	return total
}
