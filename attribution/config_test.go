package attribution_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

func TestResolveConfig(t *testing.T) {
	c, err := attribution.ResolveConfig("high", map[string]any{"min_confidence": 0.41, "min_gap_ratio": json.Number("0.03")})
	if err != nil || c.Preset != "high" || c.MinConfidence != 0.41 || c.MinGapRatio != 0.03 || c.MinSamplesPerRank != 5 {
		t.Fatalf("%+v %v", c, err)
	}
	for _, name := range []string{"", "  HIGH ", "Low", "medium"} {
		if _, err := attribution.ResolveConfig(name, nil); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	if c, _ := attribution.ResolveConfig("", nil); c.Preset != "medium" || c.SynchronyWindowNs != 120_000_000 {
		t.Fatalf("default preset %+v", c)
	}
	if c, _ := attribution.ResolveConfig(" LOW", nil); c.Preset != "low" || c.MinGapBytes != 256<<20 || c.MinConfidence != 0.7 {
		t.Fatalf("low preset %+v", c)
	}
	c, err = attribution.ResolveConfig("medium", map[string]any{
		"min_samples_per_rank": json.Number("3.0"), "min_gap_bytes": json.Number("5e7"),
		"marker_window_ns": 1e8, "robust_zscore_threshold": json.Number("2"), "synchrony_window_ns": int64(7),
	})
	if err != nil || c.MinSamplesPerRank != 3 || c.MinGapBytes != 50_000_000 || c.MarkerWindowNs != 100_000_000 ||
		c.RobustZscoreThreshold != 2 || c.SynchronyWindowNs != 7 {
		t.Fatalf("numeric forms: %+v %v", c, err)
	}
}

// TestResolveConfigPythonNumbers: values are applied as Python holds them,
// so bools are ints and fractions of the integer fields compare as Python
// compares an int with a float.
func TestResolveConfigPythonNumbers(t *testing.T) {
	c, err := attribution.ResolveConfig("medium", map[string]any{
		"min_samples_per_rank": json.Number("3.5"),     // n < 3.5 iff n < 4
		"min_gap_bytes":        json.Number("1000.25"), // gap >= 1000.25 iff gap >= 1001
		"marker_window_ns":     json.Number("99.9"),    // |dt| <= 99.9 iff |dt| <= 99
		"synchrony_window_ns":  0.5,                    // |dt| <= 0.5 iff dt == 0
		"interval_padding_ns":  json.Number("1e3"),     // integral: 1000
		"min_confidence":       true,                   // Python's True == 1
		"min_synchrony_ratio":  json.Number("0"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.MinSamplesPerRank != 4 || c.MinGapBytes != 1001 || c.MarkerWindowNs != 99 || c.SynchronyWindowNs != 0 ||
		c.IntervalPaddingNs != 1000 || c.MinConfidence != 1 || c.MinSynchronyRatio != 0 {
		t.Fatalf("%+v", c)
	}
	huge, err := attribution.ResolveConfig("medium", map[string]any{"marker_window_ns": json.Number("1e300"), "min_gap_bytes": json.Number("99999999999999999999")})
	if err != nil || huge.MarkerWindowNs != math.MaxInt64 || huge.MinGapBytes != math.MaxInt64 {
		t.Fatalf("beyond int64: %+v %v", huge, err)
	}
}

func TestResolveConfigErrors(t *testing.T) {
	tests := []struct {
		preset    string
		overrides map[string]any
		want      string
	}{
		{"bogus", nil, "Unknown collective attribution preset: 'bogus' (known: high, low, medium)"},
		{"it's", nil, `Unknown collective attribution preset: "it's" (known: high, low, medium)`},
		{"  ", nil, "Unknown collective attribution preset: '  ' (known: high, low, medium)"},
		{"HİGH", nil, "Unknown collective attribution preset: 'HİGH' (known: high, low, medium)"},
		{"medium", map[string]any{"preset": "low"}, "Unknown collective attribution override fields: preset"},
		{"medium", map[string]any{"b": 1, "a": 2}, "Unknown collective attribution override fields: a, b"},
		{"bogus", map[string]any{"a": 1}, "Unknown collective attribution preset: 'bogus' (known: high, low, medium)"},
		{"medium", map[string]any{"min_samples_per_rank": 2}, "min_samples_per_rank must be >= 3"},
		{"medium", map[string]any{"robust_zscore_threshold": 0}, "robust_zscore_threshold must be > 0"},
		{"medium", map[string]any{"min_confidence": 1.5}, "min_confidence must be in [0, 1]"},
		{"medium", map[string]any{"min_synchrony_ratio": -0.1}, "min_synchrony_ratio must be in [0, 1]"},
		{"medium", map[string]any{"min_gap_bytes": -1}, "min_gap_bytes must be >= 0"},
		{"medium", map[string]any{"min_gap_ratio": -1}, "min_gap_ratio must be >= 0"},
		{"medium", map[string]any{"marker_window_ns": -1}, "marker_window_ns must be >= 0"},
		{"medium", map[string]any{"interval_padding_ns": -1}, "interval_padding_ns must be >= 0"},
		{"medium", map[string]any{"synchrony_window_ns": -1}, "synchrony_window_ns must be >= 0"},
		{"medium", map[string]any{"min_samples_per_rank": 2, "min_confidence": 2}, "min_samples_per_rank must be >= 3"},
		// Values are checked as Python compares them, whatever their type.
		{"medium", map[string]any{"min_samples_per_rank": json.Number("2.5")}, "min_samples_per_rank must be >= 3"},
		{"medium", map[string]any{"min_samples_per_rank": true}, "min_samples_per_rank must be >= 3"},
		{"medium", map[string]any{"min_gap_bytes": json.Number("-0.5")}, "min_gap_bytes must be >= 0"},
		{"medium", map[string]any{"marker_window_ns": -0.5}, "marker_window_ns must be >= 0"},
		{"medium", map[string]any{"interval_padding_ns": json.Number("-1.5")}, "interval_padding_ns must be >= 0"},
		{"medium", map[string]any{"synchrony_window_ns": json.Number("-1e-9")}, "synchrony_window_ns must be >= 0"},
		{"medium", map[string]any{"min_confidence": json.Number("1.0000001")}, "min_confidence must be in [0, 1]"},
		{"medium", map[string]any{"robust_zscore_threshold": false}, "robust_zscore_threshold must be > 0"},
		// A fractional padding would make Python's interval bounds floats.
		{"medium", map[string]any{"interval_padding_ns": json.Number("1.5")}, "interval_padding_ns must be an integer"},
		// Python pads by the whole value; an end can hold a padding below 2**63.
		{"medium", map[string]any{"interval_padding_ns": json.Number("9223372036854775808")}, "interval_padding_ns must be < 2**63"},
		{"medium", map[string]any{"interval_padding_ns": json.Number("1e19")}, "interval_padding_ns must be < 2**63"},
		// No number: refused at its field's turn in the reference's order.
		{"medium", map[string]any{"min_gap_bytes": "100"}, "min_gap_bytes must be a number"},
		{"medium", map[string]any{"min_confidence": nil}, "min_confidence must be a number"},
		{"medium", map[string]any{"min_confidence": []any{}}, "min_confidence must be a number"},
		{"medium", map[string]any{"min_samples_per_rank": 2, "min_confidence": "x"}, "min_samples_per_rank must be >= 3"},
		{"medium", map[string]any{"min_samples_per_rank": 4, "min_confidence": "x"}, "min_confidence must be a number"},
		{"medium", map[string]any{"min_gap_ratio": math.NaN()}, "min_gap_ratio must be >= 0"},
	}
	for _, tc := range tests {
		_, err := attribution.ResolveConfig(tc.preset, tc.overrides)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q %v: error %v, want %q", tc.preset, tc.overrides, err, tc.want)
		}
	}
}

func TestMatchesCollectiveToken(t *testing.T) {
	for _, s := range []string{"All-Reduce", "AllGather", "reduce-scatter", "ncclKernel", "communications",
		"barriers", "Broadcasting", "uncollectiveX", "NCCL all_reduce phase", "all__reduce", "x-B-a-R-r-I-e-R-y"} {
		if !attribution.MatchesCollectiveToken(s) {
			t.Errorf("%q should match", s)
		}
	}
	for _, s := range []string{"", "  ", "all reduce", "reduce scatter", "sample", "nccI", "nc.cl", "communicatİon", "ncc\u00e9l"} {
		if attribution.MatchesCollectiveToken(s) {
			t.Errorf("%q should not match", s)
		}
	}
}
