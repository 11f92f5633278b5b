package ingest

import (
	"unsafe"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// SampleRun is the samples one ConvertMetrics call formed for one (job,
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
	Rank  int64
	// WorldSize is the declared world size, 0 when unknown.
	WorldSize int64
	// Host is the rank's host name, "" when unknown.
	Host      string
	LocalRank int64
	// DeviceID is the GPU index, -1 when unknown.
	DeviceID int64
	Samples  []SamplePoint
}

// SamplePoint is one sample's time and memory counters in bytes. The
// optional counters are valid when their bit is set in Has.
//
// The counters are declared in role order, so that the Converter forms a
// sample in place, from the values its points wrote by role (counters).
type SamplePoint struct {
	TimestampNs        int64
	DeviceUsed         int64
	DeviceFree         int64
	DeviceTotal        int64
	AllocatorReserved  int64
	AllocatorAllocated int64
	AllocatorActive    int64
	AllocatorInactive  int64
	// deviceReserved is the DCGM driver-reserved framebuffer while the
	// sample is formed, which only completes DeviceTotal; 0 once formed.
	deviceReserved int64
	// processUsed is the rank's own process's GPU memory while the sample
	// is formed, which replaces DeviceUsed; 0 once formed.
	processUsed int64
	Has         OptionalCounters
}

// sampleLayout is SamplePoint with its counters as an array indexed by
// role: the same size, with the counters and Has at the same offsets, which
// the constants below check at compile time (a difference either way
// overflows one of a pair).
type sampleLayout struct {
	TimestampNs int64
	counters    [numRoles]int64
	Has         OptionalCounters
}

const (
	_ = unsafe.Sizeof(SamplePoint{}) - unsafe.Sizeof(sampleLayout{})
	_ = unsafe.Sizeof(sampleLayout{}) - unsafe.Sizeof(SamplePoint{})
	_ = unsafe.Offsetof(SamplePoint{}.DeviceUsed) - unsafe.Offsetof(sampleLayout{}.counters)
	_ = unsafe.Offsetof(sampleLayout{}.counters) - unsafe.Offsetof(SamplePoint{}.DeviceUsed)
	_ = unsafe.Offsetof(SamplePoint{}.Has) - unsafe.Offsetof(sampleLayout{}.Has)
	_ = unsafe.Offsetof(sampleLayout{}.Has) - unsafe.Offsetof(SamplePoint{}.Has)
)

// counters returns p's counters indexed by role. TestSamplePointCounters
// checks which field each role is.
func (p *SamplePoint) counters() *[numRoles]int64 {
	return &(*sampleLayout)(unsafe.Pointer(p)).counters
}

// OptionalCounters says which optional counters of a SamplePoint are set.
type OptionalCounters uint8

const (
	HasDeviceFree OptionalCounters = 1 << iota
	HasDeviceTotal
	HasAllocatorActive
	HasAllocatorInactive
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
