package jobsim

import (
	"encoding/binary"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Metric names of an in-process exporter (processor contract §3.1 defaults).
const (
	MetricDeviceUsed         = "gpu.memory.device.used"
	MetricDeviceFree         = "gpu.memory.device.free"
	MetricDeviceTotal        = "gpu.memory.device.total"
	MetricAllocatorReserved  = "gpu.memory.allocator.reserved"
	MetricAllocatorAllocated = "gpu.memory.allocator.allocated"
	MetricAllocatorActive    = "gpu.memory.allocator.active"
	MetricAllocatorInactive  = "gpu.memory.allocator.inactive"
)

// DeviceMetrics selects who reports device memory: the in-process exporter (NVML), a DCGM
// exporter scraped by the collector, or both.
type DeviceMetrics int

const (
	DeviceFromOTLP DeviceMetrics = iota
	DeviceFromDCGM
	DeviceFromBoth
)

func (s *Scenario) timestamp(epoch time.Time, r int, t time.Duration) pcommon.Timestamp {
	return pcommon.NewTimestampFromTime(epoch.Add(t + s.Ranks[r].ClockSkew))
}

// UnixNano is the timestamp rank r reports for job time t (clock skew included).
func (s *Scenario) UnixNano(epoch time.Time, r int, t time.Duration) int64 {
	return epoch.Add(t + s.Ranks[r].ClockSkew).UnixNano()
}

func (s *Scenario) putResource(res pcommon.Resource, r int) {
	rk := &s.Ranks[r]
	a := res.Attributes()
	a.PutStr("service.name", "trainer")
	a.PutStr("training.job.id", s.Config.JobID)
	a.PutInt("training.rank", int64(rk.Rank))
	a.PutInt("training.local_rank", int64(rk.LocalRank))
	a.PutInt("training.world_size", int64(s.Config.Ranks))
	a.PutStr("host.name", rk.Host)
	a.PutInt("process.pid", s.PID(r))
	a.PutInt("gpu.index", int64(rk.GPU))
	a.PutStr("gpu.uuid", rk.UUID)
}

// Metrics returns the memory gauges every reporting rank sampled in [from, to), one
// resource per rank, as an in-process OTel exporter sends them (all gauges of one
// collection share a timestamp). Device gauges are left out when DCGM reports them alone.
func (s *Scenario) Metrics(from, to time.Duration, epoch time.Time, device DeviceMetrics) pmetric.Metrics {
	md := pmetric.NewMetrics()
	for r := range s.Ranks {
		ts := s.sampleTimesIn(r, from, to)
		if len(ts) == 0 {
			continue
		}
		rm := md.ResourceMetrics().AppendEmpty()
		s.putResource(rm.Resource(), r)
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName("gpujobsim")
		samples := make([]Sample, len(ts))
		for i, t := range ts {
			samples[i] = s.SampleAt(r, t)
		}
		gauge := func(name, desc string, value func(Sample) int64) {
			m := sm.Metrics().AppendEmpty()
			m.SetName(name)
			m.SetDescription(desc)
			m.SetUnit("By")
			dps := m.SetEmptyGauge().DataPoints()
			dps.EnsureCapacity(len(samples))
			for _, smp := range samples {
				dp := dps.AppendEmpty()
				dp.SetTimestamp(s.timestamp(epoch, r, smp.Time))
				dp.SetIntValue(value(smp))
			}
		}
		gauge(MetricAllocatorReserved, "Bytes reserved by the caching allocator.", func(x Sample) int64 { return x.Reserved })
		gauge(MetricAllocatorAllocated, "Bytes held by live tensors.", func(x Sample) int64 { return x.Allocated })
		gauge(MetricAllocatorActive, "Bytes in active allocator blocks.", func(x Sample) int64 { return x.Active })
		gauge(MetricAllocatorInactive, "Bytes in inactive allocator split blocks.", func(x Sample) int64 { return x.Inactive })
		if device != DeviceFromDCGM {
			gauge(MetricDeviceUsed, "Device memory in use (NVML).", func(x Sample) int64 { return x.DeviceUsed })
			gauge(MetricDeviceFree, "Free device memory (NVML).", func(x Sample) int64 { return x.DeviceFree })
			gauge(MetricDeviceTotal, "Device memory capacity (NVML).", func(x Sample) int64 { return x.DeviceTotal })
		}
		if s.Config.NCCLStats {
			s.appendCommMemoryGauge(sm.Metrics(), r, ts, epoch)
		}
	}
	return md
}

// Traces returns the spans of every step that ended in [from, to) on every reporting rank:
// a "train" root per step, forward/backward/optimizer phase spans with phase.path, and one
// NCCL span per collective call, child of the phase it runs in.
func (s *Scenario) Traces(from, to time.Duration, epoch time.Time) ptrace.Traces {
	td := ptrace.NewTraces()
	for r := range s.Ranks {
		steps := s.stepsEndingIn(r, from, to)
		if len(steps) == 0 {
			continue
		}
		rs := td.ResourceSpans().AppendEmpty()
		s.putResource(rs.Resource(), r)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("gpujobsim")
		for _, step := range steps {
			s.appendStep(ss.Spans(), epoch, s.stepSpans(r, step))
		}
	}
	return td
}

func (s *Scenario) appendStep(spans ptrace.SpanSlice, epoch time.Time, st StepSpans) {
	seed := uint64(s.Config.Seed)
	var tid pcommon.TraceID
	binary.BigEndian.PutUint64(tid[:8], hash3(seed, uint64(st.Rank), uint64(st.Step)))
	binary.BigEndian.PutUint64(tid[8:], hash3(seed^0x7472616365, uint64(st.Rank), uint64(st.Step)))
	n := uint64(0)
	nextID := func() pcommon.SpanID {
		n++
		var id pcommon.SpanID
		binary.BigEndian.PutUint64(id[:], hash3(seed^0x7370616e, uint64(st.Rank)<<32|uint64(st.Step), n))
		return id
	}
	add := func(name string, parent pcommon.SpanID, start, end time.Duration) ptrace.Span {
		sp := spans.AppendEmpty()
		sp.SetName(name)
		sp.SetTraceID(tid)
		sp.SetSpanID(nextID())
		sp.SetParentSpanID(parent)
		sp.SetKind(ptrace.SpanKindInternal)
		sp.SetStartTimestamp(s.timestamp(epoch, st.Rank, start))
		sp.SetEndTimestamp(s.timestamp(epoch, st.Rank, end))
		return sp
	}
	phaseSpan := func(p PhaseSpan, parent pcommon.SpanID) ptrace.Span {
		sp := add(p.Name, parent, p.Start, p.End)
		sp.Attributes().PutStr("phase.path", p.PathString())
		sp.Attributes().PutInt("training.step", int64(st.Step))
		return sp
	}
	root := phaseSpan(st.Root, pcommon.NewSpanIDEmpty())
	phaseIDs := map[string]pcommon.SpanID{}
	for _, p := range st.Phases {
		phaseIDs[p.Name] = phaseSpan(p, root.SpanID()).SpanID()
	}
	for _, c := range st.Collectives {
		parent := root.SpanID()
		if id, ok := phaseIDs[c.Phase]; ok {
			parent = id
		}
		sp := add("nccl:"+c.Op, parent, c.Start, c.End)
		a := sp.Attributes()
		a.PutStr("nccl.collective", c.Op)
		a.PutStr("nccl.comm.id", s.CommID)
		a.PutInt("nccl.seq", c.Seq)
		a.PutInt("nccl.message.size", c.MsgBytes)
		a.PutInt("nccl.nranks", int64(s.Config.Ranks))
		s.worldIdentity(st.Rank, c).PutSpanAttributes(a)
	}
}
