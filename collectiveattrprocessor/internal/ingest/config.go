package ingest

import "time"

// IdentityKeys lists, per identity field, the attribute keys looked up on the
// item (data point, span, log record) and then on its resource (contract §2).
// Within one list the first key present wins.
type IdentityKeys struct {
	JobID     []string
	Rank      []string
	LocalRank []string
	WorldSize []string
	Host      []string
	// Device keys may hold an index (int, integral double or decimal string)
	// or an opaque id such as a GPU UUID. The first index-valued key and the
	// first opaque-valued key are both kept, so that a rank that reports only
	// `gpu.uuid` still joins DCGM points that carry `gpu` and `UUID`.
	Device []string
	// MIGInstance keys hold the MIG GPU instance id of the GPU the device
	// UUID names (DCGM's GPU_I_ID): a MIG instance point joins the rank
	// that reported the same GPU UUID and instance.
	MIGInstance []string
	// Process keys hold the id of the process that sent the item
	// (process.pid) and ProcessStart its start time
	// (process.creation.time): a ranked item's process is its session, so
	// that a restarted process's samples and phase spans are a new session
	// of the rank (docs/evidence-mode.md §7.1). A value of the wrong form
	// counts as absent: the job id then stands in for the session.
	Process      []string
	ProcessStart []string
}

// DefaultIdentityKeys returns the contract §2 defaults.
func DefaultIdentityKeys() IdentityKeys {
	return IdentityKeys{
		JobID:     []string{"training.job.id", "job_id", "torchelastic.run_id", "TORCHELASTIC_RUN_ID", "slurm.job.id", "SLURM_JOB_ID", "k8s.job.name"},
		Rank:      []string{"training.rank", "rank", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"},
		LocalRank: []string{"training.local_rank", "local_rank", "LOCAL_RANK"},
		WorldSize: []string{"training.world_size", "world_size", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"},
		// The node name first: in Kubernetes host.name is the pod's
		// hostname on a rank and the exporter pod's on DCGM, so only the
		// node name (the downward API's, or k8s_node_name relabelled from
		// the scrape target) meets on both sides. The NCCL Inspector join
		// has its own keys (InspectorConfig.HostKeys), the pod's.
		Host:        []string{"k8s.node.name", "k8s_node_name", "host.name", "Hostname", "hostname"},
		Device:      []string{"gpu.index", "device_id", "gpu", "gpu.uuid", "UUID", "uuid"},
		MIGInstance: []string{"gpu.mig.instance_id", "GPU_I_ID"},
		// OpenTelemetry's process resource attributes.
		Process:      DefaultInspectorPIDKeys(),
		ProcessStart: []string{"process.creation.time"},
	}
}

// MetricNames lists, per TelemetryEvent field, the metric names that carry it
// (contract §3.1). Names starting with "DCGM_" and metrics whose unit is
// "MiB" or "MiBy" are in MiB and are scaled by 2^20; everything else is bytes.
type MetricNames struct {
	DeviceUsed         []string
	DeviceFree         []string
	DeviceTotal        []string
	AllocatorReserved  []string
	AllocatorAllocated []string
	AllocatorActive    []string
	AllocatorInactive  []string
	// DeviceReserved is the driver-reserved framebuffer (DCGM_FI_DEV_FB_RESERVED).
	// It is no TelemetryEvent field: it only completes the device total
	// (used + free + reserved) when no total metric is reported.
	DeviceReserved []string
	// ProcessUsed is the GPU memory of the rank's own process (NVML's
	// per-process figure). When a rank reports it, its samples are formed
	// from it instead of device used, which includes other processes'
	// memory on the GPU. Only a point carrying its rank counts: a
	// device-level one may be any process's.
	ProcessUsed []string
}

// DefaultMetricNames returns the contract §3.1 defaults.
func DefaultMetricNames() MetricNames {
	return MetricNames{
		DeviceUsed:         []string{"gpu.memory.device.used", "hw.gpu.memory.usage", "DCGM_FI_DEV_FB_USED"},
		DeviceFree:         []string{"gpu.memory.device.free", "DCGM_FI_DEV_FB_FREE"},
		DeviceTotal:        []string{"gpu.memory.device.total", "hw.gpu.memory.limit", "DCGM_FI_DEV_FB_TOTAL"},
		AllocatorReserved:  []string{"gpu.memory.allocator.reserved"},
		AllocatorAllocated: []string{"gpu.memory.allocator.allocated"},
		AllocatorActive:    []string{"gpu.memory.allocator.active"},
		AllocatorInactive:  []string{"gpu.memory.allocator.inactive"},
		DeviceReserved:     []string{"DCGM_FI_DEV_FB_RESERVED"},
		ProcessUsed:        []string{"process.gpu.memory.usage", "process.gpu.memory.used", "gpu.memory.process.used"},
	}
}

// Config configures a Converter. Zero durations and limits take the defaults
// below.
type Config struct {
	Identity IdentityKeys
	Metrics  MetricNames
	// SampleJoinTolerance is how far apart in event time a device-used point
	// and the other roles' points may be to form one sample (default 250ms).
	SampleJoinTolerance time.Duration
	// IdentityTTL is how long an unused (host, device) → (job, rank) mapping
	// is kept (default 10m).
	IdentityTTL time.Duration
	// PhaseSpanNames are span names treated as phase spans when the span has
	// no `phase.path` attribute.
	PhaseSpanNames []string
	// NoPhaseSpans makes no span a phase span, whatever its attributes and
	// PhaseSpanNames: the processor sets it when it builds no phase index
	// (phases: false), so that phase spans cost neither conversion nor
	// buffer space.
	NoPhaseSpans bool

	// PendingTTL is how long (wall clock) a metric point waits for its join
	// partners before it is dropped (default 30s). A device-used point
	// dropped without forming a sample is counted as unjoinable.
	PendingTTL time.Duration
	// MaxPendingRows bounds the distinct timestamps whose points are
	// buffered per (job, rank) between calls (default 256: 25.6 s of 10 Hz
	// data, so that device metrics that reach the processor seconds after
	// the allocator's still find their partners). Within a call, a rank's
	// points are first logged as they come (the log is as large as the
	// batch, and is dropped after the call when it grew large).
	MaxPendingRows int
	// MaxSeries bounds the number of (job, rank) join buffers (default 65536).
	// Points of a new (job, rank) beyond it are skipped as over_limit.
	MaxSeries int
	// MaxIdentityMappings bounds the (host, device) mappings (default 65536).
	// When full, new devices are not learned until mappings expire.
	MaxIdentityMappings int
	// MaxFutureSkew is how far ahead of the wall clock an item's timestamp may
	// be before it is skipped as future (default 1m).
	MaxFutureSkew time.Duration
	// Inspector configures NCCL Inspector records (InspectorConfig).
	Inspector InspectorConfig
	// Reads is what the attribution engine reads beyond what every engine
	// reads (EngineReads).
	Reads EngineReads
	// MaxIdentityBytes bounds the length of an identity string (job id,
	// host, opaque device id, stormlog session id; default 256). An item
	// with a longer one is skipped as invalid_value before anything of it
	// is interned or buffered, so that the bytes held per job, series and
	// mapping are bounded along with their counts.
	MaxIdentityBytes int
	// MaxWorldSize bounds a declared world size (limits.max_ranks_per_job;
	// 0: unbounded). A larger one is no job's that the processor holds: the
	// item is kept with its world size unknown, so that one bad record
	// cannot become the job's expected world size.
	MaxWorldSize int64
	// AdmitsJob reports whether data of a job may be kept (nil: every
	// job): the store's job limit, asked before a job id is interned or a
	// join buffer made for it. An item of a job it refuses is skipped as
	// over_limit.
	AdmitsJob func(job string) bool
}

// EngineReads is what ingestion reads for an attribution engine beyond
// what every engine reads: samples, bare marker times, stormlog records,
// phase spans and NCCL Inspector records (whose markers InspectorConfig
// shapes). The processor's mode declares it once; ingestion asks it, never
// which mode runs.
type EngineReads struct {
	// CollectiveMarkers reads each marker as the collective it marks: a
	// marker span is one marker from its start to its end, each marker
	// carries the collective identity its span's or event's attributes
	// name (markeridentity.go), and a span that names a communicator and
	// a sequence number is a marker span without a token. Without it a
	// marker span gives bare marker times at its start and its end.
	CollectiveMarkers bool
	// Accounting reads the points of NCCL's memory accounting gauge
	// (AccountingMetric) as KindAccounting records.
	Accounting bool
}

const (
	defaultSampleJoinTolerance = 250 * time.Millisecond
	defaultIdentityTTL         = 10 * time.Minute
	defaultPendingTTL          = 30 * time.Second
	defaultMaxPendingRows      = 256
	defaultMaxSeries           = 1 << 16
	defaultMaxIdentityMappings = 1 << 16
	// DefaultMaxFutureSkew: NTP keeps hosts within milliseconds; a minute
	// covers a badly synchronised node without letting one bad clock move a
	// job's event time far ahead of the others.
	DefaultMaxFutureSkew = time.Minute
	// DefaultMaxIdentityBytes: SLURM, Kubernetes and UUID identities are
	// well under 100 bytes; a DNS name is at most 253.
	DefaultMaxIdentityBytes = 256
)

func (cfg Config) withDefaults() Config {
	if cfg.SampleJoinTolerance <= 0 {
		cfg.SampleJoinTolerance = defaultSampleJoinTolerance
	}
	if cfg.IdentityTTL <= 0 {
		cfg.IdentityTTL = defaultIdentityTTL
	}
	if cfg.PendingTTL <= 0 {
		cfg.PendingTTL = defaultPendingTTL
	}
	if cfg.MaxPendingRows <= 0 {
		cfg.MaxPendingRows = defaultMaxPendingRows
	}
	if cfg.MaxSeries <= 0 {
		cfg.MaxSeries = defaultMaxSeries
	}
	if cfg.MaxIdentityMappings <= 0 {
		cfg.MaxIdentityMappings = defaultMaxIdentityMappings
	}
	if cfg.MaxFutureSkew <= 0 {
		cfg.MaxFutureSkew = DefaultMaxFutureSkew
	}
	if cfg.MaxIdentityBytes <= 0 {
		cfg.MaxIdentityBytes = DefaultMaxIdentityBytes
	}
	cfg.Inspector = cfg.Inspector.withDefaults()
	return cfg
}
