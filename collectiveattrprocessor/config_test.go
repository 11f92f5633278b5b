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

var fileStorageWindows = component.MustNewIDWithName("file_storage", "windows")

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	full := &Config{
		Mode:                ModeReference,
		Evidence:            map[string]any{},
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
		EmitTimeout:         2 * time.Second,
		MaxFutureSkew:       30 * time.Second,
		EmittedMemoryTTL:    10 * time.Minute,
		HiddenPeakInterval:  15 * time.Second,
		Limits:              LimitsConfig{MaxJobs: 10, MaxRanksPerJob: 64, MaxEventsPerRank: 5000, MaxIdentityBytes: 128, MaxEmittedJobs: 20},
		Identity: IdentityConfig{
			JobID: []string{"run.id"}, Rank: []string{"my.rank"}, LocalRank: []string{"my.local_rank"},
			WorldSize: []string{"my.world_size"}, Host: []string{"node"}, Device: []string{"gpu.index", "gpu.uuid"}, MIGInstance: []string{"mig.gi"},
			ProcessHost: []string{"k8s.pod.name"}, PID: []string{"pid"}, ProcessStart: []string{"started"},
		},
		NCCLInspector: InspectorConfig{Hold: 10 * time.Second, MaxPending: 100},
		Metrics: MetricsConfig{
			DeviceUsed: []string{"used"}, DeviceFree: []string{"free"}, DeviceTotal: []string{"total"},
			AllocatorReserved: []string{"reserved"}, AllocatorAllocated: []string{"allocated"},
			AllocatorActive: []string{"active"}, AllocatorInactive: []string{"inactive"},
			DeviceReserved: []string{"driver.reserved"}, ProcessUsed: []string{"proc.used"},
		},
		PhaseSpanNames:     []string{"train", "optimizer"},
		Storage:            &fileStorageWindows,
		CheckpointInterval: 3 * time.Second,
	}

	boolOverride := createDefaultConfig().(*Config)
	boolOverride.Overrides = map[string]any{"min_gap_bytes": true}
	nearSettle := createDefaultConfig().(*Config)
	nearSettle.Window, nearSettle.EvaluationInterval = 5*time.Second, 10*time.Second
	noRankKeys := createDefaultConfig().(*Config)
	noRankKeys.Identity.Rank = []string{}
	fileStorage := component.MustNewID("file_storage")
	storageEvidence := createDefaultConfig().(*Config)
	storageEvidence.Mode, storageEvidence.Storage = ModeEvidence, &fileStorage

	tests := []struct {
		name        string
		want        component.Config
		wantErr     string
		wantWarning string
	}{
		{name: "", want: createDefaultConfig()},
		{name: "full", want: full},
		{name: "unknown_preset", wantErr: "Unknown collective attribution preset: 'bogus' (known: high, low, medium)"},
		{name: "unknown_override", wantErr: "Unknown collective attribution override fields: bogus, preset"},
		{name: "bad_override_value", wantErr: "min_samples_per_rank must be >= 3"},
		{name: "window", wantErr: "window must be >= 1s, got 0s"},
		{name: "evaluation_interval", wantErr: "evaluation_interval must be >= 100ms, got -1s"},
		{name: "emit", wantErr: `emit must be one of on_settle, on_job_end, got "sometimes"`},
		{name: "settle_delay", wantErr: "settle_delay must be >= 0s, got -1s"},
		{name: "job_idle_timeout", wantErr: "job_idle_timeout must be >= 1s, got 0s"},
		{name: "sample_join_tolerance", wantErr: "sample_join_tolerance must be > 0, got 0s"},
		{name: "identity_ttl", wantErr: "identity_ttl must be >= 1s, got 0s"},
		{name: "max_jobs", wantErr: "limits.max_jobs must be an integer in [1, 9223372036854775807], got 0"},
		{name: "max_ranks_per_job", wantErr: "limits.max_ranks_per_job must be an integer in [1, 9223372036854775807], got -1"},
		{name: "max_events_per_rank", wantErr: "limits.max_events_per_rank must be an integer in [1, 9223372036854775807], got 0"},
		// Issue 16 item 7: values that were accepted and did harm.
		{name: "window_bare_number", wantErr: "window: 5 has no unit and would be read as nanoseconds; write the unit, e.g. 5s"},
		{name: "window_short", wantErr: "window must be >= 1s, got 500ms"},
		// Nested keys are checked as the top-level ones: the keys come from
		// the Config type.
		{name: "nccl_inspector_hold_bare_number", wantErr: "nccl_inspector.hold: 30 has no unit and would be read as nanoseconds; write the unit, e.g. 30s"},
		{name: "nccl_inspector_max_pending_fraction", wantErr: "nccl_inspector.max_pending must be an integer, got 1.5"},
		{name: "evaluation_interval_1ns", wantErr: "evaluation_interval must be >= 100ms, got 1ns"},
		{name: "settle_past_window", wantErr: "settle_delay must be < window (2s) with emit: on_settle, got 2s"},
		{name: "emit_timeout", wantErr: "emit_timeout must be >= 100ms, got 10ms"},
		{name: "device_used_empty", wantErr: "metrics.device_used must list at least one metric name, got []"},
		{name: "allocator_reserved_empty", wantErr: "metrics.allocator_reserved must list at least one metric name, got []"},
		{name: "max_jobs_past_int64", wantErr: "limits.max_jobs must be an integer in [1, 9223372036854775807], got 9223372036854775808"},
		{name: "max_jobs_past_uint64", wantErr: "limits.max_jobs must be an integer in [1, 9223372036854775807], got 1e+20"},
		{name: "max_events_fraction", wantErr: "limits.max_events_per_rank must be an integer in [1, 9223372036854775807], got 2.5"},
		{name: "max_ranks_bool", wantErr: "max_ranks_per_job"},
		{name: "window_bool", wantErr: "window"},
		// Issue 16 items 1, 4 and 5.
		{name: "max_future_skew", wantErr: "max_future_skew must be >= 1s, got 100ms"},
		{name: "emitted_memory_ttl", wantErr: "emitted_memory_ttl must be >= 1m0s, got 30s"},
		{name: "hidden_peak_interval", wantErr: "hidden_peak_interval must be >= 0s, got -1s"},
		{name: "hidden_peak_interval_bare", wantErr: "hidden_peak_interval: 30 has no unit and would be read as nanoseconds; write the unit, e.g. 30s"},
		{name: "max_identity_bytes", wantErr: "limits.max_identity_bytes must be an integer in [1, 65536], got 0"},
		{name: "max_identity_bytes_huge", wantErr: "limits.max_identity_bytes must be an integer in [1, 65536], got 1048576"},
		{name: "max_emitted_jobs", wantErr: "limits.max_emitted_jobs must be an integer in [1, 9223372036854775807], got 0"},
		{name: "checkpoint_interval_short", wantErr: "checkpoint_interval must be in [100ms, 1h0m0s], got 10ms"},
		{name: "checkpoint_interval_long", wantErr: "checkpoint_interval must be in [100ms, 1h0m0s], got 2h0m0s"},
		{name: "checkpoint_interval_bare", wantErr: "checkpoint_interval: 10 has no unit and would be read as nanoseconds; write the unit, e.g. 10s"},
		// Checkpoints hold evidence mode's state too.
		{name: "storage_evidence", want: storageEvidence},
		// Legal, as in the reference, but probably not meant: warned.
		{name: "bool_override", want: boolOverride, wantWarning: "overrides.min_gap_bytes: true is taken as 1, as the reference (Python) takes a bool for an int; write the number"},
		{name: "window_near_settle", want: nearSettle, wantWarning: "window (5s) < settle_delay (2s) + evaluation_interval (10s)"},
		{name: "no_rank_keys", want: noRankKeys, wantWarning: "identity.rank: []"},
		{name: "blank_identity_key", wantErr: "identity.rank[1] must be a non-empty string"},
		{name: "nccl_inspector_hold", wantErr: "nccl_inspector.hold must be positive, got 0s"},
		{name: "nccl_inspector_max_pending", wantErr: "nccl_inspector.max_pending must be at least 1, got 0"},
		{name: "no_pid_keys", wantErr: "identity.pid must name at least one key"},
		{name: "blank_metric_name", wantErr: "metrics.device_used[0] must be a non-empty string"},
	}
	for _, tt := range tests {
		t.Run("name="+tt.name, func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.name).String())
			require.NoError(t, err)
			err = sub.Unmarshal(cfg)
			if err == nil {
				err = confmap.Validate(cfg)
			}
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
			warnings := cfg.(*Config).warnings()
			if tt.wantWarning == "" {
				assert.Empty(t, warnings)
			} else {
				require.Len(t, warnings, 1)
				assert.Contains(t, warnings[0], tt.wantWarning)
			}
		})
	}
}

func TestConfigValidateReportsEveryBadField(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Window = 0
	cfg.Limits.MaxJobs = 0
	err := cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "window must be >= 1s")
	assert.Contains(t, err.Error(), "limits.max_jobs must be an integer in [1, 9223372036854775807], got 0")
}
