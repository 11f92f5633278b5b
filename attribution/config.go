package attribution

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
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
// Override values may be json.Number (decode with UseNumber) or Go numbers.
// Unlike the reference, which applies values without any type check (its open
// question 8), values are type-checked: integer fields (min_samples_per_rank,
// min_gap_bytes and the *_ns windows) take any number with an integral value
// (3, 3.0 and 3e0 alike, as Python compares them equal) and reject 3.5 with
// "<field> must be an integer"; float fields take any number; anything else
// (string, bool, null, object) is rejected with "<field> must be a number".
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
	if len(overrides) > 0 {
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
		for _, k := range OverrideFields {
			v, ok := overrides[k]
			if !ok {
				continue
			}
			if err := cfg.set(k, v); err != nil {
				return Config{}, err
			}
		}
	}
	return cfg, cfg.Validate()
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

func (c *Config) set(key string, v any) error {
	switch key {
	case "min_samples_per_rank":
		return setInt(&c.MinSamplesPerRank, key, v)
	case "min_gap_bytes":
		return setInt(&c.MinGapBytes, key, v)
	case "marker_window_ns":
		return setInt(&c.MarkerWindowNs, key, v)
	case "interval_padding_ns":
		return setInt(&c.IntervalPaddingNs, key, v)
	case "synchrony_window_ns":
		return setInt(&c.SynchronyWindowNs, key, v)
	case "min_gap_ratio":
		return setFloat(&c.MinGapRatio, key, v)
	case "robust_zscore_threshold":
		return setFloat(&c.RobustZscoreThreshold, key, v)
	case "min_synchrony_ratio":
		return setFloat(&c.MinSynchronyRatio, key, v)
	case "min_confidence":
		return setFloat(&c.MinConfidence, key, v)
	}
	return fmt.Errorf("Unknown collective attribution override fields: %s", key)
}

func setInt(dst *int64, key string, v any) error {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			*dst = n
			return nil
		}
		// Fraction, exponent or out of range: exact check via big.Float.
		f, _, err := big.ParseFloat(string(x), 10, 256, big.ToNearestEven)
		if err != nil {
			return fmt.Errorf("%s must be a number", key)
		}
		n, acc := f.Int64()
		if acc != big.Exact || !f.IsInt() {
			return fmt.Errorf("%s must be an integer", key)
		}
		*dst = n
		return nil
	case float64:
		return setIntFromFloat(dst, key, x)
	case float32:
		return setIntFromFloat(dst, key, float64(x))
	case int:
		*dst = int64(x)
	case int64:
		*dst = x
	case int32:
		*dst = int64(x)
	case uint64:
		if x > math.MaxInt64 {
			return fmt.Errorf("%s must be an integer", key)
		}
		*dst = int64(x)
	case uint:
		if uint64(x) > math.MaxInt64 {
			return fmt.Errorf("%s must be an integer", key)
		}
		*dst = int64(x)
	case uint32:
		*dst = int64(x)
	default:
		return fmt.Errorf("%s must be a number", key)
	}
	return nil
}

func setIntFromFloat(dst *int64, key string, x float64) error {
	if x != math.Trunc(x) || x < -(1<<63) || x >= 1<<63 {
		return fmt.Errorf("%s must be an integer", key)
	}
	*dst = int64(x)
	return nil
}

func setFloat(dst *float64, key string, v any) error {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return fmt.Errorf("%s must be a number", key)
		}
		*dst = f
	case float64:
		*dst = x
	case float32:
		*dst = float64(x)
	case int:
		*dst = float64(x)
	case int64:
		*dst = float64(x)
	case int32:
		*dst = float64(x)
	case uint64:
		*dst = float64(x)
	case uint:
		*dst = float64(x)
	case uint32:
		*dst = float64(x)
	default:
		return fmt.Errorf("%s must be a number", key)
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
