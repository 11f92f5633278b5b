package ingest

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// noAttributes stands for the attributes of a point that has none.
var noAttributes = pcommon.NewMap()

// blockMetric is a memory metric of the resource being read in lockstep.
type blockMetric struct {
	dps  pmetric.NumberDataPointSlice
	role role
	unit valueUnit
}

// convertLockstep reads the memory metrics of resource i straight into a
// zip block of its series, when the resource has the in-process exporter's
// shape: each memory metric a gauge or a sum that is not delta, of a
// distinct role, device used and allocator reserved among them, all with
// the points of the same collections in time order, none with attributes
// of its own, a flag or an invalid value, none late, and the resource's
// series fed by nothing else yet in this call (a later source of the same
// series spills the block to the row path). That skips buffering every
// point and checking the shape afterwards, which is most of a batch's
// cost.
//
// It reports done when the resource is read. Otherwise it has changed
// nothing the per-point path (convertPoints) would not change in the same
// way, and that path reads the resource; begun says the resource's
// identity state is already begun (beginResourceAt), which that path must
// then not do again. This holds because resolving the resource's series
// (itemSeries) a second time only reads what the first time cached, and
// the first time's skip is dropped here and reported by that path: a
// counter added beside a skip in itemSeries, seriesFor or identify would
// count twice.
func (c *Converter) convertLockstep(i int, rm pmetric.ResourceMetrics, nowNs, limit int64) (done, begun bool) {
	blk, ok := c.lockstepBlock(rm, limit)
	if !ok {
		return false, false
	}
	c.beginResourceAt(&c.metricsMemo, i, rm.Resource().Attributes(), nowNs)
	s := c.itemSeries(noAttributes, nowNs, func(Skip) {})
	if s == nil || s.touchedGen == c.gen || s.late(roleDeviceUsed, c.zipRows[blk.off].TimestampNs) {
		// The per-point path resolves the identity again (cached since)
		// and reports what this one did not.
		c.zipRows = c.zipRows[:blk.off]
		return false, true
	}
	c.resolvedResource(s)
	s.block = blk
	c.touch(s)
	c.fast.lockstep++
	return true, true
}

// lockstepBlock reads rm's memory metrics into a new zip block, or reports
// false, with c.zipRows as it was, when they do not have its shape.
func (c *Converter) lockstepBlock(rm pmetric.ResourceMetrics, limit int64) (blk zipBlock, ok bool) {
	// On the stack: the slices point into the input, and a heap copy
	// would cost a write barrier and a clear per metric.
	var metrics [numRoles]blockMetric
	k, ok := c.blockMetricsOf(rm, &metrics)
	if !ok {
		return blk, false
	}
	n := metrics[0].dps.Len()
	blk.off, blk.n = c.newZipRows(n), n
	rows := blk.rows(c)
	for j := range k {
		bm := &metrics[j]
		blk.order[j], blk.roles = bm.role, blk.roles|1<<bm.role
		if !readRun(bm, rows, j == 0, limit) {
			c.zipRows = c.zipRows[:blk.off]
			return blk, false
		}
	}
	return blk, true
}

// blockMetricsOf lists in metrics rm's memory metrics that have points,
// and returns how many, when each is a gauge or cumulative sum of a
// distinct role, all with the same number of points, and device used and
// allocator reserved are among them.
func (c *Converter) blockMetricsOf(rm pmetric.ResourceMetrics, metrics *[numRoles]blockMetric) (int, bool) {
	var roles uint16
	found := 0
	sms := rm.ScopeMetrics()
	for j := 0; j < sms.Len(); j++ {
		ms := sms.At(j).Metrics()
		for k := 0; k < ms.Len(); k++ {
			m := ms.At(k)
			r, dps, kind := c.memoryMetric(k, m)
			if kind == notMemory {
				continue
			}
			if kind != levels {
				return 0, false
			}
			if dps.Len() == 0 {
				continue
			}
			if roles&(1<<r) != 0 || (found > 0 && dps.Len() != metrics[0].dps.Len()) {
				return 0, false
			}
			roles |= 1 << r
			unit := unitBytes
			if isMiB(m) {
				unit = unitMiB
			}
			metrics[found] = blockMetric{dps: dps, role: r, unit: unit}
			found++
		}
	}
	return found, zippable(roles)
}

// readRun reads a metric's points into its role's column of rows: it
// reports false at the first point the zip block cannot take. The first
// metric's points set the rows' times, which must be valid and strictly
// increasing; every other metric's must be the same.
func readRun(bm *blockMetric, rows []SamplePoint, first bool, limit int64) bool {
	for l := range rows {
		dp := bm.dps.At(l)
		if dp.Flags() != 0 || dp.Attributes().Len() != 0 {
			return false
		}
		bytes := dp.IntValue()
		if dp.ValueType() != pmetric.NumberDataPointValueTypeInt || uint64(bytes) > uint64(bm.unit.maxInt) {
			var detail string
			if bytes, detail = pointBytes(dp, bm.unit); detail != "" {
				return false
			}
		} else {
			bytes *= bm.unit.scale
		}
		ts := int64(dp.Timestamp())
		if first {
			if ts <= 0 || ts > limit || (l > 0 && ts <= rows[l-1].TimestampNs) {
				return false
			}
			rows[l].TimestampNs = ts
		} else if ts != rows[l].TimestampNs {
			return false
		}
		rows[l].counters()[bm.role] = bytes
	}
	return true
}
