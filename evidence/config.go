package evidence

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// Config is evidence mode's configuration: the reference's preset fields
// (same names, same validation) and the evidence-specific Params.
//
// Of the reference fields, evidence mode reads min_samples_per_rank (a rank
// with fewer samples is not judged), robust_zscore_threshold (a spike's
// excess must reach twice this many robust standard deviations of the
// rank's own spread, or this many, and at least 2.5, when the collective's
// members corroborate it), marker_window_ns (bare markers: how far from the
// spike a marker may lie), interval_padding_ns, synchrony_window_ns (bare
// markers only: the wall-clock synchrony window), min_synchrony_ratio (the
// share of a communicator's members that must show the spike at their own
// marker of the same collective) and min_confidence. min_gap_bytes and
// min_gap_ratio are validated but not read: the size floor is
// Params.MinExcessBytes, on the excess over the rank's baseline rather
// than on the absolute gap, which includes the baseline.
type Config struct {
	attribution.Config
	Evidence Params
}

// Params are the evidence-specific settings (config key `evidence`).
type Params struct {
	// MinExcessBytes is the size floor on a spike's excess over the rank's
	// baseline (and on a step's height): below it a change is allocator
	// churn or page-granularity noise, not NCCL buffers. Default per
	// preset: low 48 MiB, medium 32 MiB, high 16 MiB.
	MinExcessBytes int64 `mapstructure:"min_excess_bytes"`
	// SpreadFloorBytes is the least robust standard deviation a rank's
	// baseline is given (a flat baseline has a MAD of 0). Default 2 MiB,
	// the driver's allocation granularity.
	SpreadFloorBytes int64 `mapstructure:"spread_floor_bytes"`
	// BaselineWindowNs is the span before and after a sample whose medians
	// give its baseline (their mean, or the side that does not reach across
	// a level step); a change that holds for more than about half of it is
	// a level step. Default 8 s.
	BaselineWindowNs int64 `mapstructure:"baseline_window_ns"`
	// MatchToleranceNs widens a marker's interval on both sides when a
	// spike's rise is matched to it. Default 50 ms.
	MatchToleranceNs int64 `mapstructure:"match_tolerance_ns"`
	// ApproximateToleranceNs replaces MatchToleranceNs for markers flagged
	// nccl.time_approximate. Default 500 ms.
	ApproximateToleranceNs int64 `mapstructure:"approximate_tolerance_ns"`
	// ResolvedMinSamples is how many sampling intervals, each widened by
	// MatchToleranceNs (how far from the launch or the end a sample still
	// places a change there), a collective must last on every member before
	// a spike that rises at its launch and falls at its end there counts as
	// resolved inside it. Default 4.
	ResolvedMinSamples float64 `mapstructure:"resolved_min_samples"`
}

// ParamFields are the keys of the `evidence` config, in validation order:
// Params' mapstructure tags, in field order, so that a field added to Params
// is a key without being listed again.
var ParamFields = paramKeys()

func paramKeys() []string {
	var keys []string
	for f := range reflect.TypeFor[Params]().Fields() {
		keys = append(keys, f.Tag.Get("mapstructure"))
	}
	return keys
}

const mib = 1 << 20

var presetParams = map[string]Params{
	"low":    {MinExcessBytes: 48 * mib},
	"medium": {MinExcessBytes: 32 * mib},
	"high":   {MinExcessBytes: 16 * mib},
}

// DefaultParams returns the evidence defaults of a resolved preset name.
func DefaultParams(preset string) Params {
	p := presetParams[preset]
	if p.MinExcessBytes == 0 {
		p = presetParams[attribution.DefaultPreset]
	}
	p.SpreadFloorBytes = 2 * mib
	p.BaselineWindowNs = 8_000_000_000
	p.MatchToleranceNs = 50_000_000
	p.ApproximateToleranceNs = 500_000_000
	p.ResolvedMinSamples = 4
	return p
}

// ResolveConfig resolves preset and overrides exactly as the reference mode
// does (same errors), then applies the evidence keys over the preset's
// evidence defaults and validates them. Values may be json.Number or Go
// numbers.
func ResolveConfig(preset string, overrides, evidenceKeys map[string]any) (Config, error) {
	ref, err := attribution.ResolveConfig(preset, overrides)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Config: ref, Evidence: DefaultParams(ref.Preset)}
	var unknown []string
	for k := range evidenceKeys {
		if !slices.Contains(ParamFields, k) {
			unknown = append(unknown, k)
		}
	}
	if unknown != nil {
		slices.Sort(unknown)
		return Config{}, errors.New("Unknown evidence config fields: " + strings.Join(unknown, ", "))
	}
	for _, k := range ParamFields {
		v, ok := evidenceKeys[k]
		if !ok {
			continue
		}
		f, ok := numberOf(v)
		if !ok {
			return Config{}, fmt.Errorf("evidence.%s must be a number", k)
		}
		if err := cfg.Evidence.apply(k, f); err != nil {
			return Config{}, err
		}
	}
	return cfg, cfg.Evidence.Validate()
}

// apply sets the field whose key is key (one of ParamFields); the int64
// fields take only integers.
func (p *Params) apply(key string, f float64) error {
	v := reflect.ValueOf(p).Elem().Field(slices.Index(ParamFields, key))
	if v.Kind() == reflect.Float64 {
		v.SetFloat(f)
		return nil
	}
	if f != math.Trunc(f) || f >= math.MaxInt64 || f <= math.MinInt64 {
		return fmt.Errorf("evidence.%s must be an integer", key)
	}
	v.SetInt(int64(f))
	return nil
}

// Validate checks the evidence settings; the first failure is returned.
func (p Params) Validate() error {
	switch {
	case p.MinExcessBytes < 0:
		return errors.New("evidence.min_excess_bytes must be >= 0")
	case p.SpreadFloorBytes <= 0:
		return errors.New("evidence.spread_floor_bytes must be > 0")
	case p.BaselineWindowNs <= 0:
		return errors.New("evidence.baseline_window_ns must be > 0")
	case p.MatchToleranceNs < 0:
		return errors.New("evidence.match_tolerance_ns must be >= 0")
	case p.ApproximateToleranceNs < p.MatchToleranceNs:
		return errors.New("evidence.approximate_tolerance_ns must be >= evidence.match_tolerance_ns")
	case !(p.ResolvedMinSamples >= 1) || math.IsInf(p.ResolvedMinSamples, 0):
		return errors.New("evidence.resolved_min_samples must be >= 1")
	}
	return nil
}

func numberOf(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}
