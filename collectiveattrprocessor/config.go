package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/store"
)

// EmitMode says when results leave the processor (contract §4).
type EmitMode string

const (
	// EmitOnSettle emits a result once the job's newest event time is more
	// than settle_delay past the result's interval end.
	EmitOnSettle EmitMode = "on_settle"
	// EmitOnJobEnd emits a job's results once it has been idle for
	// job_idle_timeout, or at shutdown: the emitted set is then the reference
	// batch result on the job's events.
	EmitOnJobEnd EmitMode = "on_job_end"
)

// Config is the processor configuration (contract §8).
type Config struct {
	// Mode is the attribution mode: reference (default) or evidence.
	Mode AttributionMode `mapstructure:"mode"`
	// Evidence holds evidence mode's own keys (evidence.ParamFields).
	Evidence map[string]any `mapstructure:"evidence"`
	// Preset is the reference's attribution preset: low, medium or high
	// (case-insensitive, surrounding spaces ignored, as the reference).
	Preset string `mapstructure:"preset"`
	// Overrides replaces fields of the preset (reference §2.2 overridable set).
	Overrides map[string]any `mapstructure:"overrides"`
	// Phases builds phase indexes from phase boundaries and phase spans and
	// fills each result's phase attribution. Off, spans are never phase
	// spans and boundaries are kept as plain records: phases cost nothing.
	Phases bool `mapstructure:"phases"`
	// Window bounds each rank's buffer in event time, relative to the newest
	// event of the job.
	Window time.Duration `mapstructure:"window"`
	// EvaluationInterval is the period of the background evaluation.
	EvaluationInterval time.Duration `mapstructure:"evaluation_interval"`
	Emit               EmitMode      `mapstructure:"emit"`
	// SettleDelay is how far (event time) past a result's interval end the
	// job's newest event must be before the result is emitted (on_settle).
	SettleDelay time.Duration `mapstructure:"settle_delay"`
	// JobIdleTimeout is how long (wall clock) a job may receive no data
	// before it is finalised, emitted and forgotten.
	JobIdleTimeout time.Duration `mapstructure:"job_idle_timeout"`
	// SampleJoinTolerance is how far apart in event time the metric points
	// that form one sample may be.
	SampleJoinTolerance time.Duration `mapstructure:"sample_join_tolerance"`
	// IdentityTTL is how long an unused (host, device) → (job, rank) mapping
	// is kept for joining device-level metrics.
	IdentityTTL time.Duration `mapstructure:"identity_ttl"`
	// EmitTimeout is the deadline of one delivery of a result batch to the
	// next consumer, and the most shutdown waits for the downstream.
	EmitTimeout time.Duration `mapstructure:"emit_timeout"`
	// MaxFutureSkew is how far ahead of the collector's clock an item's
	// timestamp may be; a later one is skipped as future, so that one bad
	// clock cannot move its job's event time ahead and make the job's real
	// data stale.
	MaxFutureSkew time.Duration `mapstructure:"max_future_skew"`
	// EmittedMemoryTTL is how long (wall clock) after a job last received
	// data what it emitted is remembered, after the job itself is
	// forgotten: data replayed within it does not emit its results again.
	EmittedMemoryTTL time.Duration `mapstructure:"emitted_memory_ttl"`
	// HiddenPeakInterval is the least time between two points of one
	// (job, rank)'s peak gauges (gpu.memory.hidden.peak): each holds the
	// highest value of the samples received since the previous point, so
	// a pull exporter scraped at most this often still shows every spike.
	// 0 reports them at every evaluation.
	HiddenPeakInterval time.Duration   `mapstructure:"hidden_peak_interval"`
	Limits             LimitsConfig    `mapstructure:"limits"`
	Identity           IdentityConfig  `mapstructure:"identity"`
	NCCLInspector      InspectorConfig `mapstructure:"nccl_inspector"`
	Metrics            MetricsConfig   `mapstructure:"metrics"`
	PhaseSpanNames     []string        `mapstructure:"phase_span_names"`
	// Storage is the ID of a storage extension (file_storage, say) the
	// jobs' buffers and emitted intervals are checkpointed to and restored
	// from at start; nil keeps them in memory only.
	Storage *component.ID `mapstructure:"storage"`
	// CheckpointInterval is how often the jobs that changed are written to
	// the storage: at most this much of a job's data is lost by a crash.
	CheckpointInterval time.Duration `mapstructure:"checkpoint_interval"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// LimitsConfig bounds the processor's memory whatever the input rate.
type LimitsConfig struct {
	// MaxJobs bounds the tracked jobs; data of a new job beyond it is
	// counted as over_limit (and still passes through).
	MaxJobs int `mapstructure:"max_jobs"`
	// MaxRanksPerJob bounds the tracked ranks of one job; data of a new rank
	// beyond it is counted as over_limit.
	MaxRanksPerJob int `mapstructure:"max_ranks_per_job"`
	// MaxEventsPerRank bounds each rank's buffer; the oldest events are
	// evicted (and counted) when it is full.
	MaxEventsPerRank int `mapstructure:"max_events_per_rank"`
	// MaxIdentityBytes bounds the length of a job id, host, device or
	// session id; an item with a longer one is skipped as invalid_value
	// before anything of it is stored, so the bytes held per tracked job,
	// join series and device mapping are bounded.
	MaxIdentityBytes int `mapstructure:"max_identity_bytes"`
	// MaxEmittedJobs bounds the jobs whose emitted intervals are remembered
	// (emitted_memory_ttl); past it the job seen longest ago is forgotten.
	MaxEmittedJobs int `mapstructure:"max_emitted_jobs"`
}

// IdentityConfig lists, per identity field, the attribute keys looked up on
// the item and then on its resource; the first key present wins (contract §2).
type IdentityConfig struct {
	JobID     []string `mapstructure:"job_id"`
	Rank      []string `mapstructure:"rank"`
	LocalRank []string `mapstructure:"local_rank"`
	WorldSize []string `mapstructure:"world_size"`
	Host      []string `mapstructure:"host"`
	Device    []string `mapstructure:"device"`
	// MIGInstance holds the MIG GPU instance id of the GPU that the device
	// UUID names (docs/gpu-metrics-join.md).
	MIGInstance []string `mapstructure:"mig_instance"`
	// ProcessHost and PID are the keys of the (host, pid) an NCCL
	// Inspector record is joined by (inspectorconfig.go). PID, with
	// ProcessStart (the process's start time), also names the process of
	// a ranked item: the session of its samples and phase spans, so that a
	// restarted process is a new session (docs/evidence-mode.md §7.1).
	ProcessHost  []string `mapstructure:"process_host"`
	PID          []string `mapstructure:"pid"`
	ProcessStart []string `mapstructure:"process_start"`
}

// MetricsConfig lists, per TelemetryEvent field, the metric names that carry
// it (contract §3.1).
type MetricsConfig struct {
	DeviceUsed         []string `mapstructure:"device_used"`
	DeviceFree         []string `mapstructure:"device_free"`
	DeviceTotal        []string `mapstructure:"device_total"`
	AllocatorReserved  []string `mapstructure:"allocator_reserved"`
	AllocatorAllocated []string `mapstructure:"allocator_allocated"`
	AllocatorActive    []string `mapstructure:"allocator_active"`
	AllocatorInactive  []string `mapstructure:"allocator_inactive"`
	// DeviceReserved is the driver-reserved framebuffer (DCGM's
	// DCGM_FI_DEV_FB_RESERVED): it completes the device total as
	// used + free + reserved when no total is reported.
	DeviceReserved []string `mapstructure:"device_reserved"`
	// ProcessUsed is the GPU memory of the rank's own process: when
	// reported, the rank's samples are formed from it, not from device
	// used (docs/gpu-metrics-join.md).
	ProcessUsed []string `mapstructure:"process_used"`
	// Output turns the processor's own result metrics on or off, by name
	// (metrics.gpu.memory.hidden.enabled: false; documentation.md lists
	// them): the keys the input names above sit beside are mdatagen's,
	// so that the metrics: section is the one contrib components use.
	Output metadata.MetricsConfig `mapstructure:",squash"`
}

var _ component.Config = (*Config)(nil)

func createDefaultConfig() component.Config {
	keys := ingest.DefaultIdentityKeys()
	names := ingest.DefaultMetricNames()
	return &Config{
		Mode:                ModeReference,
		Evidence:            map[string]any{},
		Preset:              "medium",
		Overrides:           map[string]any{},
		Phases:              true,
		Window:              5 * time.Minute,
		EvaluationInterval:  10 * time.Second,
		Emit:                EmitOnSettle,
		SettleDelay:         2 * time.Second,
		JobIdleTimeout:      60 * time.Second,
		SampleJoinTolerance: 250 * time.Millisecond,
		IdentityTTL:         10 * time.Minute,
		EmitTimeout:         5 * time.Second,
		MaxFutureSkew:       ingest.DefaultMaxFutureSkew,
		EmittedMemoryTTL:    time.Hour,
		HiddenPeakInterval:  30 * time.Second,
		Limits: LimitsConfig{
			MaxJobs:          1000,
			MaxRanksPerJob:   16384,
			MaxEventsPerRank: 100000,
			MaxIdentityBytes: ingest.DefaultMaxIdentityBytes,
			MaxEmittedJobs:   1000,
		},
		Identity: IdentityConfig{
			JobID:     keys.JobID,
			Rank:      keys.Rank,
			LocalRank: keys.LocalRank,
			WorldSize: keys.WorldSize,
			Host:      keys.Host,
			Device:    keys.Device,
			// MIG instance of a device UUID.
			MIGInstance: keys.MIGInstance,
			// NCCL Inspector join keys (inspectorconfig.go).
			ProcessHost: ingest.DefaultInspectorHostKeys(),
			PID:         ingest.DefaultInspectorPIDKeys(),
			// The session of a ranked item: its process.
			ProcessStart: keys.ProcessStart,
		},
		NCCLInspector: defaultInspectorConfig(),
		Metrics: MetricsConfig{
			DeviceUsed:         names.DeviceUsed,
			DeviceFree:         names.DeviceFree,
			DeviceTotal:        names.DeviceTotal,
			AllocatorReserved:  names.AllocatorReserved,
			AllocatorAllocated: names.AllocatorAllocated,
			AllocatorActive:    names.AllocatorActive,
			AllocatorInactive:  names.AllocatorInactive,
			DeviceReserved:     names.DeviceReserved,
			ProcessUsed:        names.ProcessUsed,
			Output:             metadata.DefaultMetricsConfig(),
		},
		PhaseSpanNames:     []string{},
		CheckpointInterval: 10 * time.Second,
	}
}

// Validate checks every field. Preset and overrides are checked by the
// engine's resolver, so their errors are the reference's messages word for
// word (reference §2.2).
func (cfg *Config) Validate() error {
	if _, err := attribution.ResolveConfig(cfg.Preset, cfg.Overrides); err != nil {
		return err
	}
	errs := append(cfg.validateRanges(), cfg.validateStorage()...)
	if err := cfg.validateMode(); err != nil {
		errs = append(errs, err)
	}
	if cfg.Emit != EmitOnSettle && cfg.Emit != EmitOnJobEnd {
		errs = append(errs, fmt.Errorf("emit must be one of on_settle, on_job_end, got %q", cfg.Emit))
	}
	noBlank := func(field string, names []string) {
		for i, n := range names {
			if n == "" {
				errs = append(errs, fmt.Errorf("%s[%d] must be a non-empty string", field, i))
			}
		}
	}
	noBlank("identity.job_id", cfg.Identity.JobID)
	noBlank("identity.rank", cfg.Identity.Rank)
	noBlank("identity.local_rank", cfg.Identity.LocalRank)
	noBlank("identity.world_size", cfg.Identity.WorldSize)
	noBlank("identity.host", cfg.Identity.Host)
	noBlank("identity.device", cfg.Identity.Device)
	noBlank("identity.mig_instance", cfg.Identity.MIGInstance)
	noBlank("identity.process_start", cfg.Identity.ProcessStart)
	noBlank("metrics.device_used", cfg.Metrics.DeviceUsed)
	noBlank("metrics.device_free", cfg.Metrics.DeviceFree)
	noBlank("metrics.device_total", cfg.Metrics.DeviceTotal)
	noBlank("metrics.allocator_reserved", cfg.Metrics.AllocatorReserved)
	noBlank("metrics.allocator_allocated", cfg.Metrics.AllocatorAllocated)
	noBlank("metrics.allocator_active", cfg.Metrics.AllocatorActive)
	noBlank("metrics.allocator_inactive", cfg.Metrics.AllocatorInactive)
	noBlank("metrics.device_reserved", cfg.Metrics.DeviceReserved)
	noBlank("metrics.process_used", cfg.Metrics.ProcessUsed)
	noBlank("phase_span_names", cfg.PhaseSpanNames)
	errs = append(errs, cfg.validateInspector()...)
	return errors.Join(errs...)
}

// ingestConfig is the converter's view of the configuration, reading what
// mode's engine reads.
func (cfg *Config) ingestConfig(mode modeStrategy) ingest.Config {
	return ingest.Config{
		Identity: ingest.IdentityKeys{
			JobID:     cfg.Identity.JobID,
			Rank:      cfg.Identity.Rank,
			LocalRank: cfg.Identity.LocalRank,
			WorldSize: cfg.Identity.WorldSize,
			Host:      cfg.Identity.Host,
			Device:    cfg.Identity.Device,
			// MIG instance of a device UUID.
			MIGInstance: cfg.Identity.MIGInstance,
			// The process of a ranked item: its session.
			Process:      cfg.Identity.PID,
			ProcessStart: cfg.Identity.ProcessStart,
		},
		Metrics: ingest.MetricNames{
			DeviceUsed:         cfg.Metrics.DeviceUsed,
			DeviceFree:         cfg.Metrics.DeviceFree,
			DeviceTotal:        cfg.Metrics.DeviceTotal,
			AllocatorReserved:  cfg.Metrics.AllocatorReserved,
			AllocatorAllocated: cfg.Metrics.AllocatorAllocated,
			AllocatorActive:    cfg.Metrics.AllocatorActive,
			AllocatorInactive:  cfg.Metrics.AllocatorInactive,
			DeviceReserved:     cfg.Metrics.DeviceReserved,
			ProcessUsed:        cfg.Metrics.ProcessUsed,
		},
		SampleJoinTolerance: cfg.SampleJoinTolerance,
		IdentityTTL:         cfg.IdentityTTL,
		MaxIdentityBytes:    cfg.Limits.MaxIdentityBytes,
		MaxWorldSize:        int64(cfg.Limits.MaxRanksPerJob),
		MaxFutureSkew:       cfg.MaxFutureSkew,
		PhaseSpanNames:      cfg.PhaseSpanNames,
		NoPhaseSpans:        !cfg.Phases,
		Inspector:           cfg.inspectorConfig(mode),
		Reads:               mode.reads,
	}
}

// storeConfig is the buffer store's view of the configuration, buffering
// what mode's engine reads.
func (cfg *Config) storeConfig(mode modeStrategy) store.Config {
	return store.Config{
		MaxJobs:          cfg.Limits.MaxJobs,
		MaxRanksPerJob:   cfg.Limits.MaxRanksPerJob,
		MaxEventsPerRank: cfg.Limits.MaxEventsPerRank,
		Window:           cfg.Window,
		Phases:           cfg.Phases,
		Mode:             mode.window,
		EmittedMemoryTTL: cfg.EmittedMemoryTTL,
		MaxEmittedJobs:   cfg.Limits.MaxEmittedJobs,
	}
}
