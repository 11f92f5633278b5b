package jobsim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// modeResults gives every rank of every injection one result whose class classFor picks
// ("" for none), with the kind and accounting given.
func modeResults(truth Truth, accounted bool, classFor func(TruthInjection) (class, kind string)) []Result {
	var rs []Result
	for _, in := range truth.Injections {
		class, kind := classFor(in)
		if class == "" {
			continue
		}
		for _, w := range in.PerRank {
			rs = append(rs, Result{JobID: truth.JobID, Rank: int64(w.Rank), StartNs: w.StartNs, EndNs: w.EndNs,
				Classification: class, Confidence: 0.7, Kind: kind, Accounted: accounted})
		}
	}
	return rs
}

func TestModesCheck(t *testing.T) {
	truth := newScenario(t, withDecoy).Truth(testEpoch)
	reference := modeResults(truth, false, func(in TruthInjection) (string, string) {
		if in.Kind == KindUnrelatedSpike {
			return "", ""
		}
		return in.Expected, ""
	})
	kindOf := func(in TruthInjection) string {
		if in.Kind == KindStepUp {
			return "persistent"
		}
		return "transient"
	}
	// honest: what evidence-mode §3 asks of a job without and with NCCL's accounting.
	withoutAccounting := func(in TruthInjection) (string, string) {
		switch {
		case in.Kind == KindUnrelatedSpike:
			return "", ""
		case 2*len(in.Ranks) <= truth.WorldSize:
			return attribution.CollectiveSuspect, kindOf(in)
		}
		return attribution.CollectiveLikely, kindOf(in)
	}
	withAccounting := func(in TruthInjection) (string, string) {
		if !IsCollectiveCaused(in.Kind) {
			return "", ""
		}
		return attribution.CollectiveConfirmed, kindOf(in)
	}
	override := func(base func(TruthInjection) (string, string), kind, class string) func(TruthInjection) (string, string) {
		return func(in TruthInjection) (string, string) {
			if in.Kind == kind {
				return class, kindOf(in)
			}
			return base(in)
		}
	}
	for _, tc := range []struct {
		name      string
		accounted bool
		classFor  func(TruthInjection) (string, string)
		problem   string // "" when none
	}{
		{"without accounting", false, withoutAccounting, ""},
		{"decoy confident without accounting", false, override(withoutAccounting, KindCotimedDecoy, attribution.CollectiveConfident), "confident on ranks 0-15"},
		{"unrelated spike claimed", false, override(withoutAccounting, KindUnrelatedSpike, attribution.CollectiveLikely), "unrelated_spike: likely on ranks"},
		{"world-wide spike missed", false, override(withoutAccounting, KindCollectiveSpike, attribution.CollectiveSuspect), "weaker than likely"},
		{"step up not persistent", false, func(in TruthInjection) (string, string) {
			c, _ := withoutAccounting(in)
			return c, "transient"
		}, "no persistent result"},
		{"with accounting", true, withAccounting, ""},
		{"decoy likely with accounting", true, override(withAccounting, KindCotimedDecoy, attribution.CollectiveLikely), "cotimed_decoy: likely on ranks 0-15"},
		{"collective spike only likely with accounting", true, override(withAccounting, KindCollectiveSpike, attribution.CollectiveLikely), "weaker than confirmed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := CompareModes(truth, reference, modeResults(truth, tc.accounted, tc.classFor))
			assert.Equal(t, tc.accounted, c.Accounted)
			problems := strings.Join(c.Check(), "\n")
			if tc.problem == "" {
				assert.Empty(t, problems)
			} else {
				assert.Contains(t, problems, tc.problem)
			}
		})
	}

	stray := append(modeResults(truth, true, withAccounting), Result{JobID: truth.JobID, Rank: 3,
		StartNs: truth.EpochNs + 27e9, EndNs: truth.EpochNs + 28e9, Classification: attribution.CollectiveLikely})
	c := CompareModes(truth, reference, stray)
	assert.Equal(t, 1, c.EvidenceClaimsElsewhere)
	assert.Contains(t, c.Check(), "1 claim(s) overlap no injection")
}

func TestModesTable(t *testing.T) {
	truth := newScenario(t, withDecoy).Truth(testEpoch)
	same := func(in TruthInjection) (string, string) {
		if in.Kind == KindUnrelatedSpike {
			return "", ""
		}
		return in.Expected, ""
	}
	reference := modeResults(truth, false, same)
	evidence := modeResults(truth, false, func(in TruthInjection) (string, string) {
		if in.Kind == KindCotimedDecoy {
			return attribution.CollectiveLikely, "transient"
		}
		return same(in)
	})
	c := CompareModes(truth, reference, evidence)
	var differs []string
	for _, row := range c.Rows {
		if row.Differs() {
			differs = append(differs, row.Injection.Kind)
		}
	}
	assert.Equal(t, []string{KindCotimedDecoy}, differs)
	var b strings.Builder
	assert.NoError(t, c.WriteTable(&b))
	lines := strings.Split(b.String(), "\n")
	var marked []string
	for i, l := range lines {
		if strings.HasSuffix(strings.TrimSpace(l), "<- differs") {
			marked = append(marked, lines[i-1])
			assert.Contains(t, l, "collective_likely (0-15)")
			assert.Contains(t, l, "transient")
		}
	}
	assert.Len(t, marked, 1)
	assert.Contains(t, marked[0], "cotimed_decoy @ all_reduce")
	assert.Contains(t, marked[0], "collective_confident (0-15)")
	assert.Contains(t, b.String(), "evidence mode ran without NCCL's accounting")
}
