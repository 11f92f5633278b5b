package ingest

import (
	"slices"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// A resource of the in-process exporter (one resource per rank, each of its
// memory gauges with one point per collection, every collection's points
// sharing its timestamp) carries whole samples: the points of one
// timestamp are one sample, and going through the join rows (a row per
// timestamp, a search per point, a nearest-point search per role) only to
// find that out costs more than the rest of the processor's work on a
// point. readDirect recognises such a resource and holds its points aside;
// at the end of the call formDirect forms the samples from them directly
// and leaves the rank's join buffer exactly as joinBatch would have left it
// (the maxima, the horizon, the formed and served marks, the rows past the
// horizon, the orphan counts of the rows it prunes). That holds only when
// the rank's buffered rows can have no part in the samples, which
// directFits checks; otherwise, and when the rank gets other points in the
// same call (spill), the held points go through the join as they would
// have. TestDirectEqualsJoin keeps the two ways equal.

// directBatch is one resource's memory points held aside until the end of
// the call: n samples, at directTs[first:][:n] and directVals[first:][:n]
// (by role), of the roles in roles, whose metrics came in the order order.
type directBatch struct {
	s       *series
	session uint8
	roles   uint16
	order   [numRoles]role
	metrics int
	n       int
	first   int
}

// directRoles are the roles joined reads from a sample's own row whatever
// the other roles; directWithoutTotal those it reads only when the sample
// has a free but no total.
const (
	directRoles        = 1<<roleDeviceUsed | 1<<roleAllocatorReserved | 1<<roleDeviceFree | 1<<roleDeviceTotal | 1<<roleAllocatorAllocated | 1<<roleAllocatorActive | 1<<roleAllocatorInactive
	directWithoutTotal = 1<<roleDeviceReserved | 1<<roleDeviceWideUsed
)

// readDirect holds the memory points of resource rm (its i-th) aside as a
// directBatch when they form whole samples (see above) and reports
// whether it did. When it did not but started the resource's identity
// (started), resSeries is the series its points without attributes go to,
// as convertPoints would have found it.
func (c *metricsConverter) readDirect(rm pmetric.ResourceMetrics, i int, nowNs, limit int64, accounting bool) (held, started bool, resSeries seriesOf) {
	var d directBatch
	var dps [numRoles]pmetric.NumberDataPointSlice
	var units [numRoles]valueUnit
	sms := rm.ScopeMetrics()
	for j := 0; j < sms.Len(); j++ {
		ms := sms.At(j).Metrics()
		for k := 0; k < ms.Len(); k++ {
			m := ms.At(k)
			r, pts, kind := c.memoryMetric(k, m)
			if kind == notMemory {
				if accounting && m.Name() == AccountingMetric {
					return false, false, seriesOf{}
				}
				continue
			}
			if kind != levels || r == roleProcessUsed || d.roles&(1<<r) != 0 || (d.metrics > 0 && pts.Len() != d.n) {
				return false, false, seriesOf{}
			}
			d.order[d.metrics], dps[d.metrics], units[d.metrics] = r, pts, unitBytes
			if isMiB(m) {
				units[d.metrics] = unitMiB
			}
			d.roles |= 1 << r
			d.n = pts.Len()
			d.metrics++
		}
	}
	const needed = 1<<roleDeviceUsed | 1<<roleAllocatorReserved
	if d.roles&needed != needed || d.n == 0 {
		return false, false, seriesOf{}
	}
	d.first = len(c.directTs)
	drop := func() {
		c.directTs, c.directVals = c.directTs[:d.first], c.directVals[:d.first]
	}
	if !c.readDirectPoints(&d, &dps, &units, limit) {
		drop()
		return false, false, seriesOf{}
	}
	c.ids.startResource(rm.Resource().Attributes(), &c.ids.metricsRes, i)
	s, _ := c.resolveSeries(dps[0].At(0).Attributes(), nowNs)
	if s == nil {
		drop()
		return false, true, seriesOf{}
	}
	resSeries = seriesOf{s, c.pointSession(s)}
	if !c.directFits(s, &d) {
		drop()
		return false, true, resSeries
	}
	d.s, d.session = s, resSeries.session
	c.directs = append(c.directs, d)
	s.direct = len(c.directs)
	c.touch(s)
	return true, true, resSeries
}

// readDirectPoints reads the points of d's metrics (dps, in units) into
// directTs and directVals; it reports false when one of them is not a
// valid integer level without attributes of its own at its sample's
// time, or the times do not increase.
func (c *metricsConverter) readDirectPoints(d *directBatch, dps *[numRoles]pmetric.NumberDataPointSlice, units *[numRoles]valueUnit, limit int64) bool {
	prev := int64(0)
	for l := range d.n {
		ts := int64(dps[0].At(l).Timestamp())
		if ts <= prev || ts > limit {
			return false
		}
		prev = ts
		c.directTs = append(c.directTs, ts)
	}
	times := c.directTs[d.first:]
	c.directVals = slices.Grow(c.directVals, d.n)[:d.first+d.n]
	vals := c.directVals[d.first:]
	clear(vals)
	for k := range d.metrics {
		pts, unit, r := dps[k], units[k], d.order[k]
		for l := range vals {
			dp := pts.At(l)
			v := dp.IntValue()
			if int64(dp.Timestamp()) != times[l] || dp.ValueType() != pmetric.NumberDataPointValueTypeInt ||
				uint64(v) > uint64(unit.maxInt) || dp.Flags().NoRecordedValue() || dp.Attributes().Len() != 0 {
				return false
			}
			vals[l][r] = v * unit.scale
		}
	}
	return true
}

// directFits reports whether d's samples can be formed without s's rows:
// s got no other point in this call; it is not per-process; it holds no
// pending device-used point and no point of a role d lacks (which a
// sample would look for in a neighbouring row); d's points are newer than
// its rows and not before its horizon (a call leaves no row before it, so
// newer than the rows is past it, but the rule is the horizon's); and its
// rows have room for them all (no row is shed on the way).
func (c *metricsConverter) directFits(s *series, d *directBatch) bool {
	first := c.directTs[d.first]
	var held uint16
	for r, n := range s.roleCount {
		if n != 0 {
			held |= 1 << r
		}
	}
	return s.touchedGen != c.gen && !s.perProcess &&
		held&(1<<roleDeviceUsed) == 0 && held&^d.roles == 0 &&
		(len(s.rows) == 0 || s.rows[len(s.rows)-1].tsNs < first) &&
		(!s.pruned || first >= s.horizonNs) &&
		len(s.rows)+d.n <= c.cfg.MaxPendingRows
}

// spill buffers s's points held aside into its rows (or its batch, see
// metricsConverter.addNow), as convertPoints would have when it read
// them: s gets other points in this call. None is late: directFits saw
// them past the horizon.
func (c *metricsConverter) spill(s *series, nowNs int64) {
	d := &c.directs[s.direct-1]
	s.direct = 0
	times := c.directTs[d.first:][:d.n]
	vals := c.directVals[d.first:][:d.n]
	for k := range d.metrics {
		r := d.order[k]
		for l, ts := range times {
			if c.addNow {
				s.shedUsed += s.add(s.bufferedRole(r), ts, vals[l][r], nowNs, d.session, c.cfg.MaxPendingRows)
			} else {
				s.batch = append(s.batch, batchPoint{tsNs: ts, bytes: vals[l][r], role: r, session: d.session})
			}
		}
	}
}

// formDirect forms the samples of s's points held aside, hands them to
// emit as one run and leaves s's rows as joinBatch would have.
func (c *metricsConverter) formDirect(s *series, nowNs int64, emit func(*SampleRun), skip func(Skip)) {
	defer s.dropped.report(skip)
	d := &c.directs[s.direct-1]
	s.direct = 0
	tol := c.tolNs
	times := c.directTs[d.first:][:d.n]
	vals := c.directVals[d.first:][:d.n]
	first, last := times[0], times[d.n-1]
	if !s.hasReserved || last > s.maxReservedTs {
		s.maxReservedTs, s.hasReserved = last, true
	}
	if !s.hasUsed || last > s.maxUsedTs {
		s.maxUsedTs, s.hasUsed = last, true
	}
	// markServed of the first sample reaches the rows before it.
	for j := len(s.rows) - 1; j >= 0 && first-s.rows[j].tsNs <= tol; j-- {
		s.rows[j].served = true
	}
	has := d.roles & directRoles
	if has&(1<<roleDeviceTotal) == 0 && has&(1<<roleDeviceFree) != 0 {
		has |= d.roles & directWithoutTotal
	}
	run := c.startRun(s, d.session)
	run.Samples = slices.Grow(run.Samples, d.n)
	for l, ts := range times {
		v := vals[l] // formSample writes to it
		n := len(run.Samples)
		run.Samples = run.Samples[:n+1]
		p := &run.Samples[n]
		p.TimestampNs = ts
		if !c.formSample(p, &v, has, skip) {
			run.Samples = run.Samples[:n]
		}
	}
	// prune: the rows before the horizon go, those of d's past it stay,
	// their device-used points formed.
	s.horizonNs, s.pruned = s.maxUsedTs-tol, true
	k := 0
	for k < len(s.rows) && s.rows[k].tsNs < s.horizonNs {
		s.forget(&s.rows[k])
		k++
	}
	s.rows = s.rows[k:]
	kept := 0
	for l, ts := range times {
		if ts < s.horizonNs {
			continue
		}
		s.insertRow(len(s.rows), ts)
		row := &s.rows[len(s.rows)-1]
		row.arrivalNs = max(0, nowNs)
		row.has = d.roles &^ (1 << roleDeviceUsed)
		row.formed, row.served, row.session = true, true, d.session
		row.vals = vals[l]
		kept++
	}
	for r := range numRoles {
		if row := uint16(1) << r; row&d.roles != 0 && r != roleDeviceUsed {
			s.roleCount[r] += int32(kept)
		}
	}
	s.cursor, s.firstPending = len(s.rows)-1, len(s.rows)
	c.endRun(run, emit)
	if len(s.sessions) >= compactSessionsAt {
		s.compactSessions()
	}
}

// endDirects empties the call's held points.
func (c *metricsConverter) endDirects() {
	clear(c.directs)
	c.directs = keptScratch(c.directs)
	c.directTs, c.directVals = keptScratch(c.directTs), keptScratch(c.directVals)
}
