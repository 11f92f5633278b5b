package evidence

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestParamFieldsAreTheDocumentedKeys checks that the evidence keys read
// from Params' tags are the ones docs/attribution-modes.md documents, in
// the same order, so that a field added to or renamed in Params is
// documented too.
func TestParamFieldsAreTheDocumentedKeys(t *testing.T) {
	doc, err := os.ReadFile("../docs/attribution-modes.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "Its own keys (CLI `--evidence JSON`):")
	if !ok {
		t.Fatal("docs/attribution-modes.md: no table of evidence keys")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		documented = append(documented, m[1])
	}
	if strings.Join(ParamFields, ",") != strings.Join(documented, ",") {
		t.Errorf("ParamFields %v, documented %v", ParamFields, documented)
	}
}

// TestResolveConfigSetsEachKey: each evidence key sets its own setting,
// json.Number or Go number alike; only resolved_min_samples takes a
// fraction.
func TestResolveConfigSetsEachKey(t *testing.T) {
	cfg, err := ResolveConfig("high", nil, map[string]any{
		"min_excess_bytes":         json.Number("1"),
		"spread_floor_bytes":       int64(2),
		"baseline_window_ns":       3.0,
		"match_tolerance_ns":       4,
		"approximate_tolerance_ns": json.Number("5e0"),
		"resolved_min_samples":     6.5,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Params{MinExcessBytes: 1, SpreadFloorBytes: 2, BaselineWindowNs: 3, MatchToleranceNs: 4, ApproximateToleranceNs: 5, ResolvedMinSamples: 6.5}
	if cfg.Evidence != want {
		t.Errorf("got %+v, want %+v", cfg.Evidence, want)
	}
	if got := DefaultParams("high"); got.MinExcessBytes != 16<<20 || got.ResolvedMinSamples != 4 {
		t.Errorf("defaults %+v", got)
	}
	for _, tc := range []struct {
		keys map[string]any
		err  string
	}{
		{map[string]any{"min_excess": 1, "window": 2}, "Unknown evidence config fields: min_excess, window"},
		{map[string]any{"baseline_window_ns": 1.5}, "evidence.baseline_window_ns must be an integer"},
		{map[string]any{"approximate_tolerance_ns": 1e19}, "evidence.approximate_tolerance_ns must be an integer"},
		{map[string]any{"spread_floor_bytes": "2"}, "evidence.spread_floor_bytes must be a number"},
		// Keys are applied in ParamFields order: the first bad one is named.
		{map[string]any{"resolved_min_samples": "x", "min_excess_bytes": 0.5}, "evidence.min_excess_bytes must be an integer"},
		{map[string]any{"resolved_min_samples": 0.5}, "evidence.resolved_min_samples must be >= 1"},
	} {
		if _, err := ResolveConfig("", nil, tc.keys); err == nil || err.Error() != tc.err {
			t.Errorf("%v: error %v, want %q", tc.keys, err, tc.err)
		}
	}
}
