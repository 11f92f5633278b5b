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
	"github.com/collectiveattr/collectiveattr/internal/racebuild"
)

var allPresets = []string{"low", "medium", "high"}

// familyNames are the quality families the first goals judge: every one but the
// physics families and the cadence families, which PhysicsGoals and CadenceGoals judge.
func familyNames() []string {
	var names []string
	for _, f := range jobsim.QualityFamilies {
		if !slices.Contains(PhysicsFamilies, f.Name) && !slices.Contains(cadenceFamilies, f.Name) {
			names = append(names, f.Name)
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

// skipUnderRace skips a test that evaluates quality families for minutes
// in a binary built with -race: the engines are single-threaded, so the race
// detector finds nothing there and multiplies the time; make test runs these
// without it (racebuild).
func skipUnderRace(t *testing.T) {
	t.Helper()
	if racebuild.Enabled {
		t.Skip("quality evaluation: run without -race (make test runs it so)")
	}
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
	skipUnderRace(t)
	tab := evaluate(t, ReferenceMode, Plan{Shape: "default", Families: familyNames(), Seeds: []int64{1, 2, 3},
		Presets: allPresets, NCCLStats: []bool{false}})
	reportFailures(t, tab, Check(tab, ReferenceFindings))
}

// NCCL's accounting records are neither samples nor markers to the reference, so every
// reference result is the same with and without them.
func TestReferenceModeIgnoresNCCLStats(t *testing.T) {
	skipUnderRace(t)
	shape := jobsim.DefaultQualityShape()
	for _, family := range slices.Concat(familyNames(), cadenceFamilies) {
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

// evidenceModeUnderTest is evidenceMode, or the built CLI that
// COLLECTIVEATTR_QUALITY_CLI names.
func evidenceModeUnderTest() Mode {
	if bin := os.Getenv("COLLECTIVEATTR_QUALITY_CLI"); bin != "" {
		return CLIMode(context.Background(), bin, strings.Fields(os.Getenv("COLLECTIVEATTR_QUALITY_CLI_ARGS"))...)
	}
	return evidenceMode
}

// evaluateEveryShape evaluates families on the default shape (three seeds)
// and the small and wide ones (one seed), at every preset, with and without
// NCCL's accounting.
func evaluateEveryShape(t *testing.T, mode Mode, families []string) Table {
	t.Helper()
	both := []bool{false, true}
	return evaluate(t, mode,
		Plan{Shape: "default", Families: families, Seeds: []int64{1, 2, 3}, Presets: allPresets, NCCLStats: both},
		Plan{Shape: "small", Families: families, Seeds: []int64{1}, Presets: allPresets, NCCLStats: both},
		Plan{Shape: "wide", Families: families, Seeds: []int64{1}, Presets: allPresets, NCCLStats: both})
}

// onlyFamilies is the COLLECTIVEATTR_QUALITY_FAMILIES list when set, else
// families.
func onlyFamilies(families []string) []string {
	if only := os.Getenv("COLLECTIVEATTR_QUALITY_FAMILIES"); only != "" {
		return strings.Split(only, ",")
	}
	return families
}

func TestEvidenceModeGoals(t *testing.T) {
	skipUnderRace(t)
	mode := evidenceModeUnderTest()
	if mode == nil {
		t.Skip("evidence mode is not wired: set evidenceMode or COLLECTIVEATTR_QUALITY_CLI")
	}
	tab := evaluateEveryShape(t, mode, familyNames())
	reportFailures(t, tab, Check(tab, EvidenceGoals))
}

// EVIDENCE MODE AT REAL CADENCES, WITH NCCL'S ACCOUNTING AS NCCL REPORTS IT (issue 24):
// CadenceGoals on cadenceFamilies, every preset, with and without accounting.
func TestEvidenceModeCadenceGoals(t *testing.T) {
	skipUnderRace(t)
	mode := evidenceModeUnderTest()
	// no_collective is judged by the quiet goals too: a job with no collective episode.
	families := append(slices.Clone(cadenceFamilies), "no_collective")
	families = onlyFamilies(families)
	tab := evaluateEveryShape(t, mode, families)
	reportFailures(t, tab, Check(tab, CadenceGoals))
}

// EVIDENCE MODE ON THE PHYSICS OF REAL JOBS (issue 31): PhysicsGoals on PhysicsFamilies,
// every preset, with and without accounting.
func TestEvidenceModePhysicsGoals(t *testing.T) {
	skipUnderRace(t)
	mode := evidenceModeUnderTest()
	families := onlyFamilies(PhysicsFamilies)
	tab := evaluateEveryShape(t, mode, families)
	reportFailures(t, tab, Check(tab, PhysicsGoals))
}
