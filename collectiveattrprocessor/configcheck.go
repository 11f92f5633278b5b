package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/zap"
)

// The smallest durations that make sense, from the physics the processor
// is built for: memory samples at 10 Hz (one every 100 ms), synchrony and
// marker windows of 100-180 ms, a spike that needs about nine samples of
// its rank to stand out.
const (
	// minWindow: a shorter window never holds the samples one rank needs
	// (min_samples_per_rank is 5-8, a spike on a flat baseline needs 9:
	// about a second at 10 Hz).
	minWindow = time.Second
	// minEvaluationInterval: one sample period at 10 Hz; evaluating more
	// often finds no new sample and only burns CPU (1ns burnt a core).
	minEvaluationInterval = 100 * time.Millisecond
	// minJobIdleTimeout: below a second, a job is finalised between two
	// batches of one exporter and recreated by the next.
	minJobIdleTimeout = time.Second
	// minIdentityTTL: below a second, a mapping expires between two
	// collections of its rank's allocator metrics.
	minIdentityTTL = time.Second
	// minEmitTimeout: below it a healthy remote exporter's round trip may
	// not fit.
	minEmitTimeout = 100 * time.Millisecond
	// minMaxFutureSkew: below it, batching and ordinary clock offsets
	// between hosts make good items look ahead of the collector's clock.
	minMaxFutureSkew = time.Second
	// maxIdentityBytes: the most limits.max_identity_bytes allows; beyond
	// it max_jobs stops bounding the job table's bytes in any useful way.
	maxIdentityBytes = 64 << 10
)

// durationKeys and integerKeys are the keys of the Config type's
// time.Duration and int fields, nested ones included, in field order: read
// from the type, so that a key added to it is checked too.
var (
	durationKeys = typeKeys(reflect.TypeFor[Config](), nil, func(t reflect.Type) bool { return t == reflect.TypeFor[time.Duration]() })
	integerKeys  = typeKeys(reflect.TypeFor[Config](), nil, func(t reflect.Type) bool { return t.Kind() == reflect.Int })
)

// typeKeys returns the paths (mapstructure names from the top) of t's
// fields, below prefix, whose type is wanted; it descends into struct
// fields.
func typeKeys(t reflect.Type, prefix []string, wanted func(reflect.Type) bool) [][]string {
	var keys [][]string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if name == "" || name == "-" {
			continue
		}
		path := append(slices.Clip(prefix), name)
		switch {
		case wanted(f.Type):
			keys = append(keys, path)
		case f.Type.Kind() == reflect.Struct:
			keys = append(keys, typeKeys(f.Type, path, wanted)...)
		}
	}
	return keys
}

// Unmarshal decodes the configuration after checking the values the
// decoder would silently turn into something else than what was written:
// a bare number for a duration (nanoseconds: `window: 5` is 5 ns), and an
// integer that is fractional or beyond int64 (which the decoder truncates
// or wraps to -9223372036854775808). The errors quote the value as the
// YAML parser read it.
func (cfg *Config) Unmarshal(conf *confmap.Conf) error {
	var errs []error
	for _, path := range durationKeys {
		if text, ok := bareNumber(conf.Get(strings.Join(path, confmap.KeyDelimiter))); ok {
			errs = append(errs, fmt.Errorf("%s: %s has no unit and would be read as nanoseconds; write the unit, e.g. %ss", strings.Join(path, "."), text, text))
		}
	}
	for _, path := range integerKeys {
		text, ok := notAnInt64(conf.Get(strings.Join(path, confmap.KeyDelimiter)))
		switch {
		case !ok:
		case path[0] == "limits":
			errs = append(errs, fmt.Errorf("%s must be an integer in [1, %d], got %s", strings.Join(path, "."), int64(math.MaxInt64), text))
		default:
			errs = append(errs, fmt.Errorf("%s must be an integer, got %s", strings.Join(path, "."), text))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return conf.Unmarshal(cfg)
}

// bareNumber returns the text of a non-zero number given where a duration
// is expected (0 needs no unit).
func bareNumber(v any) (string, bool) {
	switch x := v.(type) {
	case int:
		return strconv.Itoa(x), x != 0
	case int64:
		return strconv.FormatInt(x, 10), x != 0
	case uint64:
		return strconv.FormatUint(x, 10), x != 0
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), x != 0
	}
	return "", false
}

// notAnInt64 returns the text of a number that no int64 holds exactly: a
// fraction, or an integer beyond int64 (the YAML parser reads one beyond
// uint64 as a float, so its text is the float's).
func notAnInt64(v any) (string, bool) {
	switch x := v.(type) {
	case uint64:
		return strconv.FormatUint(x, 10), x > math.MaxInt64
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), x != math.Trunc(x) || x >= math.MaxInt64 || x < math.MinInt64
	}
	return "", false
}

// validateRanges checks the durations and limits against their allowed
// ranges (the README's configuration table), naming the key, the allowed
// range and the value.
func (cfg *Config) validateRanges() []error {
	var errs []error
	atLeast := func(field string, d, minimum time.Duration) {
		if d < minimum {
			errs = append(errs, fmt.Errorf("%s must be >= %s, got %s", field, minimum, d))
		}
	}
	atLeast("window", cfg.Window, minWindow)
	atLeast("evaluation_interval", cfg.EvaluationInterval, minEvaluationInterval)
	atLeast("settle_delay", cfg.SettleDelay, 0)
	if cfg.Emit == EmitOnSettle && cfg.SettleDelay >= 0 && cfg.Window >= minWindow && cfg.SettleDelay >= cfg.Window {
		errs = append(errs, fmt.Errorf("settle_delay must be < window (%s) with emit: on_settle, got %s: a result's data would leave the window before it settles", cfg.Window, cfg.SettleDelay))
	}
	atLeast("job_idle_timeout", cfg.JobIdleTimeout, minJobIdleTimeout)
	if cfg.SampleJoinTolerance <= 0 {
		errs = append(errs, fmt.Errorf("sample_join_tolerance must be > 0, got %s", cfg.SampleJoinTolerance))
	}
	atLeast("identity_ttl", cfg.IdentityTTL, minIdentityTTL)
	atLeast("emit_timeout", cfg.EmitTimeout, minEmitTimeout)
	atLeast("max_future_skew", cfg.MaxFutureSkew, minMaxFutureSkew)
	// A memory shorter than job_idle_timeout forgets a job's results
	// before the job itself is forgotten.
	atLeast("emitted_memory_ttl", cfg.EmittedMemoryTTL, max(cfg.JobIdleTimeout, minJobIdleTimeout))
	atLeast("hidden_peak_interval", cfg.HiddenPeakInterval, 0)
	for _, l := range []struct {
		field string
		n     int
	}{
		{"limits.max_jobs", cfg.Limits.MaxJobs},
		{"limits.max_ranks_per_job", cfg.Limits.MaxRanksPerJob},
		{"limits.max_events_per_rank", cfg.Limits.MaxEventsPerRank},
		{"limits.max_emitted_jobs", cfg.Limits.MaxEmittedJobs},
	} {
		if l.n < 1 {
			errs = append(errs, fmt.Errorf("%s must be an integer in [1, %d], got %d", l.field, int64(math.MaxInt64), l.n))
		}
	}
	if n := cfg.Limits.MaxIdentityBytes; n < 1 || n > maxIdentityBytes {
		errs = append(errs, fmt.Errorf("limits.max_identity_bytes must be an integer in [1, %d], got %d", maxIdentityBytes, n))
	}
	// Without a name for either, no metric point ever forms a sample.
	if len(cfg.Metrics.DeviceUsed) == 0 {
		errs = append(errs, errors.New("metrics.device_used must list at least one metric name, got []: no sample can form without device used memory"))
	}
	if len(cfg.Metrics.AllocatorReserved) == 0 {
		errs = append(errs, errors.New("metrics.allocator_reserved must list at least one metric name, got []: no sample can form without allocator reserved memory"))
	}
	return errs
}

// warnings lists the values that are legal but probably not meant.
func (cfg *Config) warnings() []string {
	var out []string
	keys := make([]string, 0, len(cfg.Overrides))
	for k := range cfg.Overrides {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if b, ok := cfg.Overrides[k].(bool); ok {
			n := 0
			if b {
				n = 1
			}
			out = append(out, fmt.Sprintf("overrides.%s: %t is taken as %d, as the reference (Python) takes a bool for an int; write the number", k, b, n))
		}
	}
	if cfg.Emit == EmitOnSettle && cfg.SettleDelay < cfg.Window && cfg.Window < cfg.SettleDelay+cfg.EvaluationInterval {
		out = append(out, fmt.Sprintf("window (%s) < settle_delay (%s) + evaluation_interval (%s): a result whose data leaves the window between two evaluations is never emitted", cfg.Window, cfg.SettleDelay, cfg.EvaluationInterval))
	}
	if len(cfg.Identity.Rank) == 0 {
		out = append(out, "identity.rank: []: no metric or span names its rank, so only stormlog records are attributed")
	}
	return out
}

// logWarnings logs each warning once, at creation.
func (cfg *Config) logWarnings(logger *zap.Logger) {
	for _, w := range cfg.warnings() {
		logger.Warn("collectiveattr: configuration value accepted but probably not meant", zap.String("warning", w))
	}
}
