package quality

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// Plan says which cases to run a mode on: every family × seed × NCCL-accounting
// setting on one shape, each with every preset.
type Plan struct {
	Shape     string // a jobsim.QualityShapeByName name
	Families  []string
	Seeds     []int64
	Presets   []string
	NCCLStats []bool
}

// Key names a row of a Table: scores summed over the plan's seeds.
type Key struct {
	Shape     string
	Family    string
	NCCLStats bool
	Preset    string
}

func (k Key) String() string {
	stats := "no stats"
	if k.NCCLStats {
		stats = "nccl stats"
	}
	return fmt.Sprintf("%s/%s/%s/%s", k.Shape, k.Family, stats, k.Preset)
}

// Table is a mode's scores per row.
type Table map[Key]*jobsim.QualityScore

// Evaluate generates every case of plan once and scores mode's results on it for each
// preset.
func Evaluate(mode Mode, plan Plan) (Table, error) {
	shape, ok := jobsim.QualityShapeByName(plan.Shape)
	if !ok {
		return nil, fmt.Errorf("unknown shape %q", plan.Shape)
	}
	t := Table{}
	for _, family := range plan.Families {
		for _, stats := range plan.NCCLStats {
			for _, seed := range plan.Seeds {
				c, err := jobsim.GenerateQualityCase(family, seed, shape, stats)
				if err != nil {
					return nil, err
				}
				for _, preset := range plan.Presets {
					results, err := mode(c.Events, preset)
					if err != nil {
						return nil, fmt.Errorf("%s seed %d: %w", family, seed, err)
					}
					k := Key{Shape: plan.Shape, Family: family, NCCLStats: stats, Preset: preset}
					if t[k] == nil {
						t[k] = &jobsim.QualityScore{}
					}
					t[k].Add(jobsim.ScoreQuality(c.Truth, results))
				}
			}
		}
	}
	return t, nil
}

// Merge adds other's rows to t (rows of different plans do not collide when their
// shapes differ).
func (t Table) Merge(other Table) {
	for k, s := range other {
		if t[k] == nil {
			t[k] = &jobsim.QualityScore{}
		}
		t[k].Add(*s)
	}
}

func familyOrder(name string) int {
	for i, f := range jobsim.QualityFamilies {
		if f.Name == name {
			return i
		}
	}
	return len(jobsim.QualityFamilies)
}

var presetOrder = []string{"low", "medium", "high"}

// Keys are t's rows in a stable order: shape, family (QualityFamilies order),
// accounting, preset (low, medium, high).
func (t Table) Keys() []Key {
	keys := make([]Key, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Key) int {
		return cmp.Or(cmp.Compare(a.Shape, b.Shape), cmp.Compare(familyOrder(a.Family), familyOrder(b.Family)),
			cmp.Compare(a.Family, b.Family), boolOrder(a.NCCLStats, b.NCCLStats),
			cmp.Compare(slices.Index(presetOrder, a.Preset), slices.Index(presetOrder, b.Preset)))
	})
	return keys
}

func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

func fmtRatio(r jobsim.Ratio) string {
	if !r.Defined {
		return "—"
	}
	return fmt.Sprintf("%.3f", r.Value)
}

// Markdown formats t as a table with the measures the goals read.
func (t Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| shape | family | NCCL stats | preset | precision | recall | confident precision | claims | FP decoy / level / none | found | decoys confident | confirmed share | step found / kind | claims per rank-hour |\n")
	b.WriteString("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, k := range t.Keys() {
		s := t[k]
		step := "—"
		if s.PersistentEpisodes > 0 {
			step = fmt.Sprintf("%d/%d / %d", s.StepsFound, s.PersistentEpisodes, s.StepKindRight)
		}
		fmt.Fprintf(&b, "| %s | %s | %t | %s | %s | %s | %s | %d | %d / %d / %d | %d/%d | %d/%d | %s | %s | %s |\n",
			k.Shape, k.Family, k.NCCLStats, k.Preset, fmtRatio(s.Precision()), fmtRatio(s.Recall()),
			fmtRatio(s.ConfidentPrecision()), s.Claims, s.FPDecoy, s.FPLevel, s.FPNoTruth, s.Found, s.Episodes,
			s.DecoysConfident, s.Decoys, fmtRatio(s.ConfirmedShare()), step, fmtRatio(s.ClaimsPerRankHour()))
	}
	return b.String()
}
