package quality

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

var allPresets = []string{"low", "medium", "high"}

func familyNames() []string {
	var names []string
	for _, f := range jobsim.QualityFamilies {
		names = append(names, f.Name)
	}
	return names
}

// baseFamilies are the families EvidenceGoals were set on: every family but
// cadenceFamilies.
func baseFamilies() []string {
	var names []string
	for _, f := range familyNames() {
		if !slices.Contains(cadenceFamilies, f) {
			names = append(names, f)
		}
	}
	return names
}

func evaluate(t *testing.T, mode Mode, plans ...Plan) Table {
	t.Helper()
	all := Table{}
	for _, p := range plans {
		tab, err := Evaluate(mode, p)
		require.NoError(t, err)
		all.Merge(tab)
	}
	return all
}

func reportFailures(t *testing.T, tab Table, failures []string) {
	t.Helper()
	if len(failures) > 0 {
		t.Errorf("%d rows out of bounds:\n%s\n\n%s", len(failures), strings.Join(failures, "\n"), tab.Markdown())
		return
	}
	t.Logf("\n%s", tab.Markdown())
}

// The reference mode's measured behaviour on the quality families: exact where every
// rank spikes together and nothing else happens at a collective, fooled where the
// physics differs (ReferenceFindings explains each bound).
func TestReferenceModeFindings(t *testing.T) {
	tab := evaluate(t, ReferenceMode, Plan{Shape: "default", Families: baseFamilies(), Seeds: []int64{1, 2, 3},
		Presets: allPresets, NCCLStats: []bool{false}})
	reportFailures(t, tab, Check(tab, ReferenceFindings))
}

// NCCL's accounting records are neither samples nor markers to the reference, so every
// reference result is the same with and without them.
func TestReferenceModeIgnoresNCCLStats(t *testing.T) {
	shape := jobsim.DefaultQualityShape()
	for _, family := range familyNames() {
		without, err := jobsim.GenerateQualityCase(family, 1, shape, false)
		require.NoError(t, err)
		with, err := jobsim.GenerateQualityCase(family, 1, shape, true)
		require.NoError(t, err)
		require.Greater(t, with.Truth.NCCLStats.Records, 0, family)
		for _, preset := range allPresets {
			a, err := ReferenceMode(without.Events, preset)
			require.NoError(t, err)
			b, err := ReferenceMode(with.Events, preset)
			require.NoError(t, err)
			assert.Equal(t, a, b, "%s %s", family, preset)
		}
	}
}

// EVIDENCE MODE GOALS (issue 17): evidence mode in process; COLLECTIVEATTR_QUALITY_CLI
// (with COLLECTIVEATTR_QUALITY_CLI_ARGS="--mode evidence") runs the same goals against
// a built CLI instead.
var evidenceMode Mode = EvidenceMode

func TestEvidenceModeGoals(t *testing.T) {
	mode := evidenceMode
	if bin := os.Getenv("COLLECTIVEATTR_QUALITY_CLI"); bin != "" {
		mode = CLIMode(context.Background(), bin, strings.Fields(os.Getenv("COLLECTIVEATTR_QUALITY_CLI_ARGS"))...)
	}
	if mode == nil {
		t.Skip("evidence mode is not wired: set evidenceMode or COLLECTIVEATTR_QUALITY_CLI")
	}
	both := []bool{false, true}
	tab := evaluate(t, mode,
		Plan{Shape: "default", Families: familyNames(), Seeds: []int64{1, 2, 3}, Presets: allPresets, NCCLStats: both},
		Plan{Shape: "small", Families: familyNames(), Seeds: []int64{1}, Presets: allPresets, NCCLStats: both},
		Plan{Shape: "wide", Families: familyNames(), Seeds: []int64{1}, Presets: allPresets, NCCLStats: both})
	reportFailures(t, tab, Check(tab.Without(cadenceFamilies...), EvidenceGoals))
}
