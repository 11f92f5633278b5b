package collectiveattrprocessor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
)

func TestModeConfig(t *testing.T) {
	tests := []struct {
		name    string
		conf    map[string]any
		wantErr string
		check   func(t *testing.T, cfg *Config)
	}{
		{name: "default", conf: map[string]any{}, check: func(t *testing.T, cfg *Config) {
			assert.Equal(t, ModeReference, cfg.Mode)
		}},
		{name: "evidence", conf: map[string]any{"mode": "evidence", "preset": "high", "evidence": map[string]any{"min_excess_bytes": 8 << 20, "resolved_min_samples": 2.5}}, check: func(t *testing.T, cfg *Config) {
			ec, err := cfg.evidenceConfig()
			require.NoError(t, err)
			assert.Equal(t, int64(8<<20), ec.Evidence.MinExcessBytes)
			assert.Equal(t, 2.5, ec.Evidence.ResolvedMinSamples)
			assert.Equal(t, evidence.DefaultParams("high").BaselineWindowNs, ec.Evidence.BaselineWindowNs)
			assert.Equal(t, "high", ec.Preset)
		}},
		{name: "unknown mode", conf: map[string]any{"mode": "guess"}, wantErr: `mode must be one of evidence, reference, got "guess"`},
		{name: "unknown evidence key", conf: map[string]any{"mode": "evidence", "evidence": map[string]any{"min_excess": 1}}, wantErr: "Unknown evidence config fields: min_excess"},
		{name: "bad evidence value", conf: map[string]any{"mode": "evidence", "evidence": map[string]any{"spread_floor_bytes": 0}}, wantErr: "evidence.spread_floor_bytes must be > 0"},
		{name: "non-number evidence value", conf: map[string]any{"evidence": map[string]any{"baseline_window_ns": "8s"}}, wantErr: "evidence.baseline_window_ns must be a number"},
		{name: "evidence keys checked in reference mode", conf: map[string]any{"evidence": map[string]any{"match_tolerance_ns": -1}}, wantErr: "evidence.match_tolerance_ns must be >= 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig().(*Config)
			err := confmap.NewFromStringMap(tt.conf).Unmarshal(cfg)
			require.NoError(t, err)
			err = confmap.Validate(cfg)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, cfg)
		})
	}
}

// TestModeStrategies: each mode's strategy is complete, and its window
// keeps the mode's own name in checkpoints, so that a job is restored only
// into the mode that buffered it.
func TestModeStrategies(t *testing.T) {
	for mode := range modeStrategies {
		t.Run(string(mode), func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.Mode = mode
			m := strategyOf(t, cfg)
			require.NotNil(t, m.window)
			assert.Equal(t, string(mode), m.window.Name())
			assert.NotNil(t, m.inspectorMarkers)
			eng, err := m.newEngine(cfg, attribution.Config{}, engineNotes{})
			require.NoError(t, err)
			assert.NotNil(t, eng)
		})
	}
}

// strategyOf is cfg's mode strategy; cfg.Mode must be valid.
func strategyOf(tb testing.TB, cfg *Config) modeStrategy {
	tb.Helper()
	m, err := cfg.strategy()
	require.NoError(tb, err)
	return m
}
