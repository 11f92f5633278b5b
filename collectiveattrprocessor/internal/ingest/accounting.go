package ingest

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/collectiveattr/collectiveattr/evidence"
)

// AccountingMetric is NCCL's own accounting of the device memory one
// communicator holds on a rank (docs/evidence-mode.md §2.2): a gauge in
// bytes with the rank's identity and nccl.comm.id on each point. With
// Config.Reads.Accounting it is read as the stormlog path reads
// comm_memory_stats records.
const AccountingMetric = "nccl.comm.memory.total"

// convertAccounting hands each valid point of the accounting metric m of
// resource rm, the i-th of its batch, to emit as a KindAccounting Record. A point without a
// communicator, with a value that is no byte count, or without a rank is
// skipped with its reason. A point whose own or resource attributes say cuMem
// is off (nccl.cumem_enabled false) carries evidence.UntrackedBytes: its
// total does not follow NCCL's buffers. begun says the resource's identity state is
// begun; it returns whether it is now.
func (c *metricsConverter) convertAccounting(rm pmetric.ResourceMetrics, i int, m pmetric.Metric, begun bool, nowNs, limit int64, emit func(*Record), skip func(Skip)) bool {
	var dps pmetric.NumberDataPointSlice
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		dps = m.Gauge().DataPoints()
	case pmetric.MetricTypeSum:
		dps = m.Sum().DataPoints()
		if m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityDelta {
			for range dps.Len() {
				skip(Skip{Reason: SkipInvalidValue, Detail: AccountingMetric + " is a delta sum, not a level"})
			}
			return begun
		}
	default:
		for range dataPointCount(m) {
			skip(Skip{Reason: SkipInvalidValue, Detail: AccountingMetric + " is not a gauge or sum"})
		}
		return begun
	}
	if dps.Len() == 0 {
		return begun
	}
	if !begun {
		c.ids.startResource(rm.Resource().Attributes(), &c.ids.metricsRes, i)
	}
	unit := unitBytes
	if isMiB(m) {
		unit = unitMiB
	}
	resourceUntracked := cumemOff(rm.Resource().Attributes())
	for l := 0; l < dps.Len(); l++ {
		dp := dps.At(l)
		if dp.Flags().NoRecordedValue() {
			continue
		}
		bytes, detail := pointBytes(dp, unit)
		if detail != "" {
			skip(Skip{Reason: SkipInvalidValue, Detail: detail})
			continue
		}
		ts, refused, ok := pointTime(dp, limit)
		if !ok {
			skip(refused)
			continue
		}
		attrs := dp.Attributes()
		comm, ok := attrs.Get(evidence.KeyCommID)
		if !ok || comm.Type() != pcommon.ValueTypeStr {
			skip(Skip{Reason: SkipInvalidValue, Detail: AccountingMetric + " point has no nccl.comm.id string"})
			continue
		}
		if reason, detail := c.ids.identifyItem(attrs, nowNs); reason != "" {
			skip(Skip{Reason: reason, Detail: detail})
			continue
		}
		if resourceUntracked || cumemOff(attrs) {
			bytes = evidence.UntrackedBytes
		}
		id := &c.ids.id
		rec := &c.rec
		*rec = Record{
			Kind: KindAccounting, JobID: id.job, Rank: id.rank, WorldSize: id.worldSize, Host: id.host,
			TimestampNs: ts, AccountingCommID: comm.Str(), AccountingBytes: bytes,
		}
		emit(rec)
	}
	return true
}

// cumemOff reports whether attrs say NCCL allocates without cuMem
// (nccl.cumem_enabled false).
func cumemOff(attrs pcommon.Map) bool {
	v, ok := attrs.Get(evidence.KeyCumemEnabled)
	return ok && v.Type() == pcommon.ValueTypeBool && !v.Bool()
}
