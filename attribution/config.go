package attribution

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// DefaultPreset is used when no preset is named.
const DefaultPreset = "medium"

var presets = map[string]Config{
	"low": {
		Preset:                "low",
		MinSamplesPerRank:     8,
		MinGapBytes:           256 << 20,
		MinGapRatio:           0.06,
		RobustZscoreThreshold: 3.0,
		MarkerWindowNs:        120_000_000,
		IntervalPaddingNs:     100_000_000,
		SynchronyWindowNs:     100_000_000,
		MinSynchronyRatio:     0.6,
		MinConfidence:         0.7,
	},
	"medium": {
		Preset:                "medium",
		MinSamplesPerRank:     6,
		MinGapBytes:           128 << 20,
		MinGapRatio:           0.04,
		RobustZscoreThreshold: 2.5,
		MarkerWindowNs:        150_000_000,
		IntervalPaddingNs:     120_000_000,
		SynchronyWindowNs:     120_000_000,
		MinSynchronyRatio:     0.5,
		MinConfidence:         0.5,
	},
	"high": {
		Preset:                "high",
		MinSamplesPerRank:     5,
		MinGapBytes:           64 << 20,
		MinGapRatio:           0.025,
		RobustZscoreThreshold: 1.8,
		MarkerWindowNs:        180_000_000,
		IntervalPaddingNs:     160_000_000,
		SynchronyWindowNs:     180_000_000,
		MinSynchronyRatio:     0.34,
		MinConfidence:         0.35,
	},
}

// PresetNames returns the preset names, sorted.
func PresetNames() []string { return []string{"high", "low", "medium"} }

// Preset returns the named preset (exact lower-case name).
func Preset(name string) (Config, bool) {
	c, ok := presets[name]
	return c, ok
}

// OverrideFields are the keys an override map may hold, in the order the
// reference declares (and validates) them. `preset` is not overridable.
var OverrideFields = []string{
	"min_samples_per_rank", "min_gap_bytes", "min_gap_ratio",
	"robust_zscore_threshold", "marker_window_ns", "interval_padding_ns",
	"synchrony_window_ns", "min_synchrony_ratio", "min_confidence",
}

// ResolveConfig is the reference's resolve_collective_attribution_config
// (§2.2): preset "" means medium; the name is trimmed and lower-cased; unknown
// override keys are rejected; the result is validated. Messages are the
// reference's.
//
// Override values may be json.Number (decode with UseNumber), Go numbers or
// bools. As in the reference, values are applied without type checks and
// then validated in the reference's order on the values as given: a bool is
// Python's int (true is 1); 2.5 for min_samples_per_rank fails ">= 3", and
// 3.5 passes and counts the way Python's int-to-float comparisons do. For
// the integer fields given a fraction that means: min_samples_per_rank and
// min_gap_bytes act as their ceiling in comparisons, the marker and
// synchrony windows as their floor, and peak_gap_bytes / min_gap_bytes
// divides by the value itself. Three departures, reached only by values the
// reference itself cannot handle cleanly: interval_padding_ns with a
// fraction is refused ("interval_padding_ns must be an integer"; Python
// would turn every interval bound into a float, which the integer
// nanoseconds of a Result cannot hold), so is one of 2**63 or more
// ("interval_padding_ns must be < 2**63"; Python pads by the whole value,
// past what an interval end can hold), while an integral float padding
// (1e3) is taken as its integer, and a value that is no number
// (string, null, object, array) is refused at its field's check with
// "<field> must be a number", where Python raises a TypeError.
func ResolveConfig(preset string, overrides map[string]any) (Config, error) {
	name := preset
	if name == "" {
		name = DefaultPreset
	}
	cfg, ok := presets[asciiLower(telemetry.TrimSpace(name))]
	if !ok {
		return Config{}, fmt.Errorf("Unknown collective attribution preset: %s (known: %s)",
			pyRepr(preset), strings.Join(PresetNames(), ", "))
	}
	if len(overrides) == 0 {
		return cfg, cfg.Validate()
	}
	var unknown []string
	for k := range overrides {
		if !slices.Contains(OverrideFields, k) {
			unknown = append(unknown, k)
		}
	}
	if unknown != nil {
		slices.Sort(unknown)
		return Config{}, errors.New("Unknown collective attribution override fields: " + strings.Join(unknown, ", "))
	}
	// The reference validates the fields in OverrideFields order; a field
	// not overridden holds its preset value, which always passes.
	for _, k := range OverrideFields {
		v, ok := overrides[k]
		if !ok {
			continue
		}
		n, isNumber := pyNumberOf(v)
		if !isNumber {
			return Config{}, fmt.Errorf("%s must be a number", k)
		}
		if err := cfg.apply(k, n); err != nil {
			return Config{}, err
		}
	}
	return cfg, nil
}

// Validate applies the reference's checks in its order; the first failure is
// returned with its message. A NaN threshold fails its range check (the
// reference would let some through because NaN compares false).
func (c Config) Validate() error {
	switch {
	case c.MinSamplesPerRank < 3:
		return errors.New("min_samples_per_rank must be >= 3")
	case c.MinGapBytes < 0:
		return errors.New("min_gap_bytes must be >= 0")
	case !(c.MinGapRatio >= 0):
		return errors.New("min_gap_ratio must be >= 0")
	case !(c.RobustZscoreThreshold > 0):
		return errors.New("robust_zscore_threshold must be > 0")
	case c.MarkerWindowNs < 0:
		return errors.New("marker_window_ns must be >= 0")
	case c.IntervalPaddingNs < 0:
		return errors.New("interval_padding_ns must be >= 0")
	case c.SynchronyWindowNs < 0:
		return errors.New("synchrony_window_ns must be >= 0")
	case !(c.MinSynchronyRatio >= 0 && c.MinSynchronyRatio <= 1):
		return errors.New("min_synchrony_ratio must be in [0, 1]")
	case !(c.MinConfidence >= 0 && c.MinConfidence <= 1):
		return errors.New("min_confidence must be in [0, 1]")
	}
	return nil
}

// pyNumber is an override value as Python holds it: an int (bools
// included) or a float.
type pyNumber struct {
	isInt bool
	i     int64   // when isInt
	f     float64 // the value as a float (ints included, for range checks)
}

// pyNumberOf reads an override value; ok is false when it is no number.
// An integer beyond int64 is kept as its float value: every check and use
// below gives the same answer for it, except interval_padding_ns, which
// apply refuses beyond int64.
func pyNumberOf(v any) (n pyNumber, ok bool) {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return pyNumber{isInt: true, i: i, f: float64(i)}, true
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return n, false
		}
		return pyNumber{f: f}, true
	case bool:
		if x {
			return pyNumber{isInt: true, i: 1, f: 1}, true
		}
		return pyNumber{isInt: true}, true
	case int:
		return pyNumber{isInt: true, i: int64(x), f: float64(x)}, true
	case int64:
		return pyNumber{isInt: true, i: x, f: float64(x)}, true
	case int32:
		return pyNumber{isInt: true, i: int64(x), f: float64(x)}, true
	case uint32:
		return pyNumber{isInt: true, i: int64(x), f: float64(x)}, true
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return pyNumber{isInt: true, i: int64(x), f: float64(x)}, true
		}
		return pyNumber{f: float64(x)}, true
	case uint64:
		if x <= math.MaxInt64 {
			return pyNumber{isInt: true, i: int64(x), f: float64(x)}, true
		}
		return pyNumber{f: float64(x)}, true
	case float64:
		return pyNumber{f: x}, true
	case float32:
		return pyNumber{f: float64(x)}, true
	}
	return n, false
}

// atLeast reports n >= bound exactly (Python compares ints and floats by
// value); NaN fails.
func (n pyNumber) atLeast(bound int64) bool {
	if n.isInt {
		return n.i >= bound
	}
	return n.f >= float64(bound)
}

// ceil and floor are the integers an integer compares with as it does with
// n: k >= n iff k >= n.ceil(), k <= n iff k <= n.floor(). Values beyond
// int64 saturate, which no count or nanosecond difference reaches.
func (n pyNumber) ceil() int64  { return n.rounded(math.Ceil) }
func (n pyNumber) floor() int64 { return n.rounded(math.Floor) }

func (n pyNumber) rounded(round func(float64) float64) int64 {
	if n.isInt {
		return n.i
	}
	switch r := round(n.f); {
	case r >= math.MaxInt64:
		return math.MaxInt64
	case r <= math.MinInt64:
		return math.MinInt64
	default:
		return int64(r)
	}
}

// apply checks one override in the reference's words and sets it.
func (c *Config) apply(key string, n pyNumber) error {
	nonNegative := func(dst *int64, round func() int64) error {
		if !n.atLeast(0) {
			return fmt.Errorf("%s must be >= 0", key)
		}
		*dst = round()
		return nil
	}
	switch key {
	case "min_samples_per_rank":
		if !n.atLeast(3) {
			return errors.New("min_samples_per_rank must be >= 3")
		}
		c.MinSamplesPerRank = n.ceil()
	case "min_gap_bytes":
		if err := nonNegative(&c.MinGapBytes, n.ceil); err != nil {
			return err
		}
		c.minGapBytesDivisor = 0
		if !n.isInt && n.f != math.Trunc(n.f) {
			c.minGapBytesDivisor = n.f
		}
	case "marker_window_ns":
		return nonNegative(&c.MarkerWindowNs, n.floor)
	case "synchrony_window_ns":
		return nonNegative(&c.SynchronyWindowNs, n.floor)
	case "interval_padding_ns":
		if err := nonNegative(&c.IntervalPaddingNs, n.floor); err != nil {
			return err
		}
		if !n.isInt && n.f != math.Trunc(n.f) {
			return errors.New("interval_padding_ns must be an integer")
		}
		if !n.isInt && n.f >= math.MaxInt64 {
			// Python would pad by the whole value; saturated, every
			// interval end would come out short.
			return errors.New("interval_padding_ns must be < 2**63")
		}
	case "min_gap_ratio":
		c.MinGapRatio = n.f
		if !(n.f >= 0) {
			return errors.New("min_gap_ratio must be >= 0")
		}
	case "robust_zscore_threshold":
		c.RobustZscoreThreshold = n.f
		if !(n.f > 0) {
			return errors.New("robust_zscore_threshold must be > 0")
		}
	case "min_synchrony_ratio":
		c.MinSynchronyRatio = n.f
		if !(n.f >= 0 && n.f <= 1) {
			return errors.New("min_synchrony_ratio must be in [0, 1]")
		}
	case "min_confidence":
		c.MinConfidence = n.f
		if !(n.f >= 0 && n.f <= 1) {
			return errors.New("min_confidence must be in [0, 1]")
		}
	}
	return nil
}

// asciiLower lower-cases ASCII letters only. A preset name with any other
// character is unknown either way: Python's str.lower() never maps a
// non-ASCII character onto the letters of "low", "medium" or "high", while
// Go's simple case mapping would map U+0130 to 'i'; leaving non-ASCII alone
// keeps the two in agreement.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// pyRepr renders s like Python's repr(str): single quotes unless the text
// holds a single quote and no double quote; backslash escapes for quotes,
// backslashes, \t \n \r and non-printable characters.
func pyRepr(s string) string {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	b := []byte{quote}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = fmt.Appendf(b, `\x%02x`, s[i])
			i++
			continue
		}
		i += n
		switch {
		case r == rune(quote) || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\t':
			b = append(b, `\t`...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r < 0x20 || r == 0x7f:
			b = fmt.Appendf(b, `\x%02x`, r)
		case r < 0x80 || unicode.IsPrint(r):
			b = utf8.AppendRune(b, r)
		case r < 0x100:
			b = fmt.Appendf(b, `\x%02x`, r)
		case r < 0x10000:
			b = fmt.Appendf(b, `\u%04x`, r)
		default:
			b = fmt.Appendf(b, `\U%08x`, r)
		}
	}
	return string(append(b, quote))
}
