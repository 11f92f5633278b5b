package jobsim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// Expectation is what one attribution mode should say about one injection: a bound on
// the classification of each of its ranks (the strongest result overlapping the rank's
// raised window; none counts as below every class) and, for the step up, a persistent
// result. It is what the mode is built to answer, which is not always what happened:
// the reference calls a co-timed decoy collective (see Right).
type Expectation struct {
	// AtLeast: every rank of the injection has a result this strong ("": no bound).
	AtLeast string
	// Below: no rank has a result this strong ("": no bound).
	Below string
	// Persistent: a result of kind persistent (the step up in evidence mode).
	Persistent bool
}

// ReferenceExpectation is the reference mode's: the class expectedClassification gave
// the injection on every rank, and for an unrelated spike no claim (likely or above).
func ReferenceExpectation(in TruthInjection) Expectation {
	if in.Kind == KindUnrelatedSpike {
		return Expectation{Below: attribution.CollectiveLikely}
	}
	return Expectation{AtLeast: in.Expected}
}

// EvidenceExpectation is the evidence mode's (evidence-mode §3), with or without NCCL's
// accounting of the job's communicators: an unrelated spike is not claimed; a co-timed
// decoy is not claimed with the accounting and at most likely without it; memory NCCL
// allocated is confirmed on all its ranks with the accounting, and without it claimed
// (likely) when it spans more than half the world (on fewer ranks it may be judged
// against a larger communicator and missed: no bound). The step up has a persistent
// result.
func EvidenceExpectation(in TruthInjection, accounted bool, worldSize int) Expectation {
	switch {
	case in.Kind == KindUnrelatedSpike, in.Kind == KindCotimedDecoy && accounted:
		return Expectation{Below: attribution.CollectiveLikely}
	case in.Kind == KindCotimedDecoy:
		return Expectation{Below: attribution.CollectiveConfident}
	case !IsCollectiveCaused(in.Kind):
		return Expectation{}
	}
	e := Expectation{Persistent: in.Kind == KindStepUp}
	switch {
	case accounted:
		e.AtLeast = attribution.CollectiveConfirmed
	case 2*len(in.Ranks) > worldSize:
		e.AtLeast = attribution.CollectiveLikely
	}
	return e
}

func (e Expectation) String() string {
	var parts []string
	if e.AtLeast != "" {
		parts = append(parts, short(e.AtLeast)+" or above")
	}
	switch e.Below {
	case "":
	case attribution.CollectiveLikely:
		parts = append(parts, "not claimed")
	default:
		parts = append(parts, "below "+short(e.Below))
	}
	if e.Persistent {
		parts = append(parts, "persistent")
	}
	if len(parts) == 0 {
		return "anything"
	}
	return strings.Join(parts, ", ")
}

func short(class string) string { return strings.TrimPrefix(class, "collective_") }

// Misses returns how the per-rank classes (and kinds) of a mode's results miss e on the
// injection's ranks ("" when they meet it).
func (e Expectation) Misses(in TruthInjection, perRank map[int]string, kinds []string) string {
	var why []string
	if e.AtLeast != "" {
		var missing, weak []string
		for _, r := range in.Ranks {
			c, ok := perRank[r]
			switch {
			case !ok:
				missing = append(missing, fmt.Sprint(r))
			case rankOf(c) < rankOf(e.AtLeast):
				weak = append(weak, fmt.Sprintf("%d:%s", r, short(c)))
			}
		}
		if len(missing) > 0 {
			why = append(why, "not found on ranks "+strings.Join(missing, ","))
		}
		if len(weak) > 0 {
			why = append(why, "weaker than "+short(e.AtLeast)+": "+strings.Join(weak, ","))
		}
	}
	if e.Below != "" {
		if ranks := ranksAtLeastOf(perRank, e.Below); len(ranks) > 0 {
			why = append(why, fmt.Sprintf("%s on ranks %s", short(strongest(perRank)), RankList(ranks)))
		}
	}
	if e.Persistent && !slices.Contains(kinds, "persistent") {
		why = append(why, "no persistent result")
	}
	return strings.Join(why, "; ")
}

// Right tells whether a mode's answer about an injection is what happened, whatever the
// mode was built to answer: memory NCCL allocated is claimed (likely or above) on all its
// ranks; any other memory is claimed on none. why says how it is wrong.
func Right(in TruthInjection, perRank map[int]string) (ok bool, why string) {
	if IsCollectiveCaused(in.Kind) {
		var missed []int
		for _, r := range in.Ranks {
			if rankOf(perRank[r]) < rankOf(attribution.CollectiveLikely) {
				missed = append(missed, r)
			}
		}
		if len(missed) > 0 {
			return false, fmt.Sprintf("NCCL's memory not claimed on ranks %s", RankList(missed))
		}
		return true, ""
	}
	if ranks := ranksAtLeastOf(perRank, attribution.CollectiveLikely); len(ranks) > 0 {
		return false, fmt.Sprintf("called %s on ranks %s, but NCCL did not allocate it", strongest(perRank), RankList(ranks))
	}
	return true, ""
}

func rankOf(class string) int { return attribution.ClassificationRank(class) }

func ranksAtLeastOf(perRank map[int]string, class string) []int {
	var ranks []int
	for r, c := range perRank {
		if rankOf(c) >= rankOf(class) {
			ranks = append(ranks, r)
		}
	}
	slices.Sort(ranks)
	return ranks
}

func strongest(perRank map[int]string) string {
	best := ""
	for _, c := range perRank {
		if rankOf(c) > rankOf(best) {
			best = c
		}
	}
	return best
}
