package quality

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// scoredRow is a family × preset row of another scorer's JSON ("summary" array): the
// counts both scorers define.
type scoredRow struct {
	Family          string   `json:"family"`
	Preset          string   `json:"preset"`
	Results         int      `json:"results"`
	Claims          int      `json:"claims"`
	Suspects        int      `json:"suspects"`
	TP              int      `json:"tp"`
	FP              int      `json:"fp"`
	FPDecoy         int      `json:"fp_decoy"`
	FPLevel         int      `json:"fp_level"`
	FPNoTruth       int      `json:"fp_no_truth"`
	ConfidentClaims int      `json:"confident_claims"`
	Episodes        int      `json:"episodes"`
	Found           int      `json:"found"`
	NotSampled      int      `json:"not_sampled"`
	Decoys          int      `json:"decoys"`
	DecoysClaimed   int      `json:"decoys_claimed"`
	DecoysConfident int      `json:"decoys_confident"`
	Persistent      int      `json:"persistent_episodes"`
	StepKindRight   *int     `json:"step_kind_right"`
	OffStep         *int     `json:"persistent_claims_off_step"`
	Flagged         float64  `json:"flagged"`
	ConfidentPrec   *float64 `json:"confident_precision"`
}

// TestScoreMatchesAnotherScorer scores a folder of written cases (DIR/<case>/truth.json
// and DIR/<case>/results/[LABEL-]<preset>.json, as `gpujobsim quality` and a CLI run
// leave them) and compares every count with another scorer's JSON of the same folder.
// Set COLLECTIVEATTR_QUALITY_CASES=DIR, COLLECTIVEATTR_QUALITY_SCORED=FILE (its "summary"
// rows) and optionally COLLECTIVEATTR_QUALITY_LABEL.
func TestScoreMatchesAnotherScorer(t *testing.T) {
	dir, scoredPath := os.Getenv("COLLECTIVEATTR_QUALITY_CASES"), os.Getenv("COLLECTIVEATTR_QUALITY_SCORED")
	if dir == "" || scoredPath == "" {
		t.Skip("set COLLECTIVEATTR_QUALITY_CASES and COLLECTIVEATTR_QUALITY_SCORED to cross-check a scored folder")
	}
	label := os.Getenv("COLLECTIVEATTR_QUALITY_LABEL")
	raw, err := os.ReadFile(scoredPath)
	require.NoError(t, err)
	var scored struct {
		Summary []scoredRow `json:"summary"`
	}
	require.NoError(t, json.Unmarshal(raw, &scored))
	require.NotEmpty(t, scored.Summary)

	ours := map[[2]string]*jobsim.QualityScore{}
	cases, err := filepath.Glob(filepath.Join(dir, "*", "truth.json"))
	require.NoError(t, err)
	for _, truthPath := range cases {
		caseDir := filepath.Dir(truthPath)
		b, err := os.ReadFile(truthPath)
		require.NoError(t, err)
		var truth jobsim.QualityTruth
		require.NoError(t, json.Unmarshal(b, &truth), truthPath)
		for _, preset := range allPresets {
			name := preset + ".json"
			if label != "" {
				name = label + "-" + name
			}
			b, err := os.ReadFile(filepath.Join(caseDir, "results", name))
			if os.IsNotExist(err) {
				continue
			}
			require.NoError(t, err)
			results, err := ParseResultsJSON(b)
			require.NoError(t, err)
			k := [2]string{truth.Family, preset}
			if ours[k] == nil {
				ours[k] = &jobsim.QualityScore{}
			}
			ours[k].Add(jobsim.ScoreQuality(truth, results))
		}
	}
	require.Len(t, ours, len(scored.Summary), "the same family × preset rows")
	for _, row := range scored.Summary {
		s := ours[[2]string{row.Family, row.Preset}]
		require.NotNil(t, s, "%s %s", row.Family, row.Preset)
		at := fmt.Sprintf("%s %s", row.Family, row.Preset)
		assert.Equal(t, []int{row.Results, row.Claims, row.Suspects, row.TP, row.FP, row.FPDecoy, row.FPLevel, row.FPNoTruth,
			row.ConfidentClaims, row.Episodes, row.Found, row.NotSampled, row.Decoys, row.DecoysClaimed, row.DecoysConfident, row.Persistent},
			[]int{s.Results, s.Claims, s.Suspects, s.TP, s.FP, s.FPDecoy, s.FPLevel, s.FPNoTruth,
				s.ConfidentClaims, s.Episodes, s.Found, s.NotSampled, s.Decoys, s.DecoysClaimed, s.DecoysConfident, s.PersistentEpisodes}, at)
		if row.StepKindRight != nil {
			assert.Equal(t, *row.StepKindRight, s.StepKindRight, at)
		}
		if row.OffStep != nil {
			assert.Equal(t, *row.OffStep, s.PersistentClaimsOffStep, at)
		}
		if row.ConfidentPrec != nil {
			assert.InDelta(t, *row.ConfidentPrec, s.ConfidentPrecision().Value, 1e-12, at)
		}
		assert.InDelta(t, row.Flagged, s.Flagged().Value, 1e-9, at)
		t.Logf("%s: claims %d tp %d found %d/%d decoys confident %d/%d: same", at, s.Claims, s.TP, s.Found, s.Episodes, s.DecoysConfident, s.Decoys)
	}
}
