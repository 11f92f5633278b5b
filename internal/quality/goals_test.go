package quality

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

func TestCheck(t *testing.T) {
	easy := Key{Shape: "default", Family: "easy", Preset: "medium"}
	easyStats := Key{Shape: "default", Family: "easy", NCCLStats: true, Preset: "medium"}
	quiet := Key{Shape: "default", Family: "no_collective", Preset: "medium"}
	tab := Table{
		easy:      {Claims: 10, TP: 9, Episodes: 20, Found: 19},
		easyStats: {Claims: 10, TP: 10, Episodes: 20, Found: 20},
		quiet:     {Claims: 3, FP: 3},
	}
	tests := []struct {
		name string
		goal Goal
		want []string
	}{
		{"met", atLeast(Recall, 0.95, "r", Rows{Families: []string{"easy"}}), nil},
		{"missed", atLeast(Precision, 0.95, "p", Rows{Presets: medium}),
			[]string{"default/easy/no stats/medium: claim precision = 0.900, want >= 0.95 (p)",
				"default/no_collective/no stats/medium: claim precision = 0.000, want >= 0.95 (p)"}},
		{"undefined passes", atLeast(Recall, 0.95, "r", Rows{Families: []string{"no_collective"}}), nil},
		{"rows by accounting", atLeast(Precision, 0.95, "p", Rows{NCCLStats: withStats}), nil},
		{"except", atLeast(Precision, 0.95, "p", Rows{Except: []string{"easy", "no_collective"}}),
			[]string{`goal "claim precision" (p) selects no row`}},
		{"ceiling", atMost(ConfidentClaims, 0, "c", Rows{Families: []string{"easy"}, NCCLStats: withoutStats}), nil},
		{"any of several selections", atMost(Precision, 0.5, "x",
			Rows{Families: []string{"no_collective"}}, Rows{Families: []string{"easy"}, NCCLStats: withStats}),
			[]string{"default/easy/nccl stats/medium: claim precision = 1.000, want <= 0.5 (x)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Check(tab, []Goal{tt.goal}))
		})
	}
}

// Every goal of the tables selects rows of a full plan (every shape evaluateEveryShape
// runs): none is a typo that checks nothing.
func TestGoalTablesSelectRows(t *testing.T) {
	tab := Table{}
	for _, shape := range []string{"default", "small", "wide"} {
		for _, f := range jobsim.QualityFamilies {
			for _, stats := range []bool{false, true} {
				for _, p := range allPresets {
					tab[Key{Shape: shape, Family: f.Name, NCCLStats: stats, Preset: p}] = &jobsim.QualityScore{}
				}
			}
		}
	}
	for _, g := range slices.Concat(EvidenceGoals, ReferenceFindings, PhysicsGoals, CadenceGoals) {
		for _, f := range Check(tab, []Goal{g}) {
			assert.NotContains(t, f, "selects no row")
		}
	}
}

func TestTableMarkdownOrder(t *testing.T) {
	tab := Table{
		{Shape: "default", Family: "pipeline", Preset: "low"}:   {},
		{Shape: "default", Family: "easy", Preset: "high"}:      {},
		{Shape: "default", Family: "easy", Preset: "low"}:       {},
		{Shape: "default", Family: "easy", NCCLStats: true}:     {},
		{Shape: "default", Family: "zzz_custom", Preset: "low"}: {},
	}
	var fams []string
	for _, k := range tab.Keys() {
		fams = append(fams, k.Family+"/"+k.Preset)
	}
	assert.Equal(t, []string{"easy/low", "easy/high", "easy/", "pipeline/low", "zzz_custom/low"}, fams)
}
