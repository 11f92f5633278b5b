package jobsim

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// MetricCommMemoryTotal is NCCL's own accounting of the device memory a communicator
// holds on a rank (ncclCommMemStats, evidence-mode §2.2).
const MetricCommMemoryTotal = "nccl.comm.memory.total"

// commBaselineBytes is NCCL's persistent memory of rank r on the world communicator:
// 40–60 % of the rank's baseline hidden memory, which it is part of, 2 MiB aligned.
func (s *Scenario) commBaselineBytes(r int) int64 {
	percent := 40 + int64(hash3(uint64(s.Config.Seed)^0x6e63636c, uint64(r), 0)%21)
	return s.Ranks[r].baselineHidden * percent / 100 / (2 * mib) * (2 * mib)
}

// injectedAt is the hidden memory the injections add on rank r at job time t: every
// injection, or only the collective-caused ones (collective spikes and the step up,
// whose transient and permanent parts are NCCL's buffers).
func (s *Scenario) injectedAt(r int, t time.Duration, collectiveOnly bool) int64 {
	var b int64
	for i := range s.Injections {
		in := &s.Injections[i]
		if collectiveOnly && !IsCollectiveCaused(in.Kind) {
			continue
		}
		sp, ok := in.perRank[r]
		if ok && t >= sp.start && t <= sp.end {
			b += sp.size
		}
		if in.Kind == KindStepUp {
			from := in.Start
			if ok {
				from = sp.start
			}
			if t >= from {
				b += in.PermanentBytes
			}
		}
	}
	return b
}

// CommMemoryAt is what NCCL reports for rank r's world communicator at job time t: its
// baseline plus the collective-caused hidden memory. Unrelated spikes and co-timed decoys
// are not NCCL's.
func (s *Scenario) CommMemoryAt(r int, t time.Duration) int64 {
	return s.commBaselineBytes(r) + s.injectedAt(r, t, true)
}

// commStatsEvent turns a sample record into NCCL's accounting record at the same time
// (same memory fields, no allocator change, no context).
func (s *Scenario) commStatsEvent(sample stormlogEvent, r int, t time.Duration) stormlogEvent {
	ev := sample
	ev.EventType = CommMemoryStatsEventType
	ev.AllocatorChangeBytes = 0
	ev.Context = nil
	ev.Metadata = map[string]any{KeyCommID: s.CommID, KeyCommMemoryTotal: s.CommMemoryAt(r, t)}
	return ev
}

// appendCommMemoryGauge adds NCCL's accounting of rank r at the sample times ts.
func (s *Scenario) appendCommMemoryGauge(ms pmetric.MetricSlice, r int, ts []time.Duration, epoch time.Time) {
	m := ms.AppendEmpty()
	m.SetName(MetricCommMemoryTotal)
	m.SetDescription("Device memory the NCCL communicator holds (ncclCommMemStats).")
	m.SetUnit("By")
	dps := m.SetEmptyGauge().DataPoints()
	dps.EnsureCapacity(len(ts))
	for _, t := range ts {
		dp := dps.AppendEmpty()
		dp.SetTimestamp(s.timestamp(epoch, r, t))
		dp.SetIntValue(s.CommMemoryAt(r, t))
		dp.Attributes().PutStr(KeyCommID, s.CommID)
	}
}
