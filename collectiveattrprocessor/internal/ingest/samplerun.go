package ingest

import "github.com/collectiveattr/collectiveattr/telemetry"

// SampleRun is the samples one Converter.Metrics call formed for one (job,
// rank), in time order. Samples are handed over a run at a time and in this
// compact form, not as one TelemetryEvent Record each: a rank reports many
// samples per batch, and the processor keeps three numbers of each, so
// building and passing a whole Event per sample cost more than forming it.
// Record expands a sample into the Record it stands for.
//
// The run is the Converter's and is reused by the next run: the handler
// copies what it keeps.
type SampleRun struct {
	JobID string
	// Session is the session of the samples: the process that sent their
	// allocator points (host/pid, with @start when its start time is
	// known), or the job id when it named none (docs/evidence-mode.md
	// §7.1). A rank's new process starts a new run.
	Session string
	Rank    int64
	// WorldSize is the declared world size, 0 when unknown.
	WorldSize int64
	// Host is the rank's host name, "" when unknown.
	Host      string
	LocalRank int64
	// DeviceID is the GPU index, -1 when unknown.
	DeviceID int64
	Samples  []SamplePoint
	// session is Session's index in its series' session table.
	session uint8
}

// SamplePoint is one sample's time and memory counters in bytes. The
// optional counters are valid when their bit is set in Has.
type SamplePoint struct {
	TimestampNs        int64
	DeviceUsed         int64
	DeviceFree         int64
	DeviceTotal        int64
	AllocatorReserved  int64
	AllocatorAllocated int64
	AllocatorActive    int64
	AllocatorInactive  int64
	Has                OptionalCounters
}

// setCounters sets p's counters from a formed sample's values by role (the
// join's driver-reserved and process roles only help form it).
func (p *SamplePoint) setCounters(v *[numRoles]int64) {
	p.DeviceUsed, p.DeviceFree, p.DeviceTotal = v[roleDeviceUsed], v[roleDeviceFree], v[roleDeviceTotal]
	p.AllocatorReserved, p.AllocatorAllocated = v[roleAllocatorReserved], v[roleAllocatorAllocated]
	p.AllocatorActive, p.AllocatorInactive = v[roleAllocatorActive], v[roleAllocatorInactive]
}

// OptionalCounters says which optional counters of a SamplePoint are set.
type OptionalCounters uint8

const (
	HasDeviceFree OptionalCounters = 1 << iota
	HasDeviceTotal
	HasAllocatorActive
	HasAllocatorInactive
	// HasProcessUsed says DeviceUsed is the rank's own process's GPU
	// memory, not the whole device's (which includes other processes'
	// contexts on the GPU).
	HasProcessUsed
)

func (p *SamplePoint) opt(bit OptionalCounters, v int64) telemetry.OptInt {
	return telemetry.OptInt{Value: v, Valid: p.Has&bit != 0}
}

// Record returns sample i as the KindSample Record it stands for: a schema 2
// "sample" TelemetryEvent from collector SampleCollector, pid -1, allocator
// change 0, host "unknown" when none is known, and the local rank equal to
// the rank when none was declared (run.LocalRank is set so).
func (r *SampleRun) Record(i int) Record {
	p := &r.Samples[i]
	host := r.Host
	if host == "" {
		host = "unknown"
	}
	return Record{
		Kind: KindSample, JobID: r.JobID, Rank: r.Rank, WorldSize: r.WorldSize, Host: r.Host, TimestampNs: p.TimestampNs,
		Event: telemetry.Event{
			SchemaVersion:           2,
			TimestampNs:             p.TimestampNs,
			EventType:               "sample",
			Collector:               SampleCollector,
			PID:                     -1,
			Host:                    host,
			JobID:                   r.JobID,
			Rank:                    r.Rank,
			LocalRank:               r.LocalRank,
			WorldSize:               r.WorldSize,
			DeviceID:                r.DeviceID,
			AllocatorAllocatedBytes: telemetry.Int(p.AllocatorAllocated),
			AllocatorReservedBytes:  telemetry.Int(p.AllocatorReserved),
			AllocatorActiveBytes:    p.opt(HasAllocatorActive, p.AllocatorActive),
			AllocatorInactiveBytes:  p.opt(HasAllocatorInactive, p.AllocatorInactive),
			AllocatorChangeBytes:    telemetry.Int(0),
			DeviceUsedBytes:         telemetry.Int(p.DeviceUsed),
			DeviceFreeBytes:         p.opt(HasDeviceFree, p.DeviceFree),
			DeviceTotalBytes:        p.opt(HasDeviceTotal, p.DeviceTotal),
		},
	}
}
