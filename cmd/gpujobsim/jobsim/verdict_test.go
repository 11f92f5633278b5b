package jobsim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// Each mode's verdict separates "as expected" (what the mode is built to answer) from
// "right" (what happened): the reference, as expected, claims the co-timed decoy, and
// that is wrong; the trust line names the evidence mode with NCCL's accounting and the
// decoy it saw through, and says what is missing without it.
func TestModeVerdictsAndTrust(t *testing.T) {
	truth := newScenario(t, withDecoy).Truth(testEpoch)
	var decoy TruthInjection
	for _, in := range truth.Injections {
		if in.Kind == KindCotimedDecoy {
			decoy = in
		}
	}
	require.NotZero(t, decoy.ID)
	reference := modeResults(truth, false, func(in TruthInjection) (string, string) {
		if in.Kind == KindUnrelatedSpike {
			return "", ""
		}
		return in.Expected, ""
	})
	honest := func(in TruthInjection) (string, string) {
		switch {
		case in.Kind == KindStepUp:
			return attribution.CollectiveConfirmed, "persistent"
		case IsCollectiveCaused(in.Kind):
			return attribution.CollectiveConfirmed, "transient"
		}
		return "", ""
	}
	n := len(truth.Injections)

	c := CompareModes(truth, reference, modeResults(truth, true, honest))
	ref, ev := c.Verdicts()
	assert.Equal(t, ModeVerdict{Mode: "reference mode", Events: n, AsExpected: n, Right: n - 1,
		Wrong: []string{fmt.Sprintf("#%d cotimed_decoy: called collective_confident on ranks 0-15, but NCCL did not allocate it", decoy.ID)}}, ref)
	assert.Equal(t, ModeVerdict{Mode: "evidence mode", Events: n, AsExpected: n, Right: n}, ev)
	var b strings.Builder
	require.NoError(t, c.WriteVerdicts(&b))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, 3, b.String())
	assert.True(t, strings.HasPrefix(lines[0], fmt.Sprintf("verdict, reference mode: as expected on %d of %d injected events; right on %d of %d (wrong on #%d", n, n, n-1, n, decoy.ID)), lines[0])
	assert.Equal(t, fmt.Sprintf("verdict, evidence mode (with NCCL's accounting): as expected on %d of %d injected events; right on %d of %d", n, n, n, n), lines[1])
	assert.True(t, strings.HasPrefix(lines[2], "which to trust: evidence mode, because this job reports NCCL's memory accounting"), lines[2])
	assert.Contains(t, lines[2], fmt.Sprintf("(#%d here)", decoy.ID))

	// Without accounting the evidence mode may call the decoy likely: as expected, but
	// wrong, and the trust line says what would settle it.
	c = CompareModes(truth, reference, modeResults(truth, false, func(in TruthInjection) (string, string) {
		if in.Kind == KindCotimedDecoy {
			return attribution.CollectiveLikely, "transient"
		}
		class, kind := honest(in)
		if class != "" {
			class = attribution.CollectiveLikely
		}
		return class, kind
	}))
	_, ev = c.Verdicts()
	assert.Equal(t, n, ev.AsExpected)
	assert.Equal(t, n-1, ev.Right)
	assert.Contains(t, c.Trust(), "without NCCL's memory accounting neither mode can tell")
}

// The ground truth table says, per injection, whether NCCL allocated the memory and what
// each mode is expected to say: for the decoy, "confident or above" from the reference
// and "not claimed" from evidence mode with the accounting.
func TestTruthTableExpectationsPerMode(t *testing.T) {
	truth := newScenario(t, withDecoy).Truth(testEpoch)
	var b strings.Builder
	require.NoError(t, truth.WriteTable(&b))
	assert.Contains(t, b.String(), "reference expects")
	assert.Contains(t, b.String(), "evidence mode with NCCL's memory accounting")
	for _, l := range strings.Split(b.String(), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 1 && f[1] == KindCotimedDecoy:
			assert.Regexp(t, `GiB\s+no\s+confident or above\s+not claimed\s`, l)
		case len(f) > 1 && f[1] == KindCollectiveSpike:
			assert.Regexp(t, `GiB\s+yes\s+(confident|likely) or above\s+confirmed or above\s`, l)
		case len(f) > 1 && f[1] == KindUnrelatedSpike:
			assert.Regexp(t, `GiB\s+no\s+not claimed\s+not claimed\s`, l)
		}
	}
}

// The single-mode verdict (gpujobsim report) says both: as expected, and right on all
// but the decoy.
func TestVerdictSummary(t *testing.T) {
	truth := newScenario(t, withDecoy).Truth(testEpoch)
	results := modeResults(truth, false, func(in TruthInjection) (string, string) {
		if in.Kind == KindUnrelatedSpike {
			return "", ""
		}
		return in.Expected, ""
	})
	v := Compare(truth, results)
	assert.True(t, v.OK)
	n := len(truth.Injections)
	assert.Contains(t, v.Summary(), fmt.Sprintf("as the reference mode is expected to answer; right on %d of %d injected events (wrong on #", n-1, n))
	assert.Contains(t, v.Summary(), "cotimed_decoy: called collective_confident")
}
