package collectiveattrprocessor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	full := &Config{
		Preset:              "High",
		Overrides:           map[string]any{"min_confidence": 0.4, "marker_window_ns": 200000000},
		Phases:              false,
		Window:              2 * time.Minute,
		EvaluationInterval:  5 * time.Second,
		Emit:                EmitOnJobEnd,
		SettleDelay:         time.Second,
		JobIdleTimeout:      30 * time.Second,
		SampleJoinTolerance: 100 * time.Millisecond,
		IdentityTTL:         5 * time.Minute,
		Limits:              LimitsConfig{MaxJobs: 10, MaxRanksPerJob: 64, MaxEventsPerRank: 5000},
		Identity: IdentityConfig{
			JobID: []string{"run.id"}, Rank: []string{"my.rank"}, LocalRank: []string{"my.local_rank"},
			WorldSize: []string{"my.world_size"}, Host: []string{"node"}, Device: []string{"gpu.index", "gpu.uuid"},
		},
		Metrics: MetricsConfig{
			DeviceUsed: []string{"used"}, DeviceFree: []string{"free"}, DeviceTotal: []string{"total"},
			AllocatorReserved: []string{"reserved"}, AllocatorAllocated: []string{"allocated"},
			AllocatorActive: []string{"active"}, AllocatorInactive: []string{"inactive"},
			DeviceReserved: []string{"driver.reserved"},
		},
		PhaseSpanNames: []string{"train", "optimizer"},
	}

	tests := []struct {
		name    string
		want    component.Config
		wantErr string
	}{
		{name: "", want: createDefaultConfig()},
		{name: "full", want: full},
		{name: "unknown_preset", wantErr: "Unknown collective attribution preset: 'bogus' (known: high, low, medium)"},
		{name: "unknown_override", wantErr: "Unknown collective attribution override fields: bogus, preset"},
		{name: "bad_override_value", wantErr: "min_samples_per_rank must be >= 3"},
		{name: "window", wantErr: "window must be > 0, got 0s"},
		{name: "evaluation_interval", wantErr: "evaluation_interval must be > 0, got -1s"},
		{name: "emit", wantErr: `emit must be one of on_settle, on_job_end, got "sometimes"`},
		{name: "settle_delay", wantErr: "settle_delay must be >= 0, got -1s"},
		{name: "job_idle_timeout", wantErr: "job_idle_timeout must be > 0, got 0s"},
		{name: "sample_join_tolerance", wantErr: "sample_join_tolerance must be > 0, got 0s"},
		{name: "identity_ttl", wantErr: "identity_ttl must be > 0, got 0s"},
		{name: "max_jobs", wantErr: "limits.max_jobs must be >= 1, got 0"},
		{name: "max_ranks_per_job", wantErr: "limits.max_ranks_per_job must be >= 1, got -1"},
		{name: "max_events_per_rank", wantErr: "limits.max_events_per_rank must be >= 1, got 0"},
		{name: "blank_identity_key", wantErr: "identity.rank[1] must be a non-empty string"},
		{name: "blank_metric_name", wantErr: "metrics.device_used[0] must be a non-empty string"},
	}
	for _, tt := range tests {
		t.Run("name="+tt.name, func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.name).String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestConfigValidateReportsEveryBadField(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Window = 0
	cfg.Limits.MaxJobs = 0
	err := cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "window must be > 0")
	assert.Contains(t, err.Error(), "limits.max_jobs must be >= 1")
}
