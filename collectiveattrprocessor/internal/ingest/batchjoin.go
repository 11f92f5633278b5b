package ingest

import (
	"math"
	"math/bits"
)

// batchPoint is a valid point of one call, waiting for the end of the call.
type batchPoint struct {
	tsNs  int64
	bytes int64
	role  role
}

// joinBatch joins the points s received in this call and hands the samples
// they form to emit. The common batch takes the zip path; any other is
// added row by row (add) and joined by formSamples, exactly as the points
// arrived.
func (c *Converter) joinBatch(s *series, nowNs int64, emit func(*SampleRun), skip func(Skip)) {
	if c.noZip || !c.zipBatch(s, nowNs, emit, skip) {
		for _, p := range s.batch {
			c.shed(s.add(p.role, p.tsNs, p.bytes, nowNs, c.cfg.MaxPendingRows), skip)
		}
		c.formSamples(s, emit, skip)
	}
	s.batch = keptScratch(s.batch)
}

// zipBatch forms the samples of the common batch without building the rows
// first: an in-process exporter sends, per rank, each role's points of the
// same collections, a metric after another. When the batch is k runs of n
// points, one run per distinct role, with device used and allocator
// reserved among them; every run has the same strictly increasing times,
// all after the series' newest row and device-used time; the series holds
// no pending device-used point and no point of a role the batch lacks; and
// n more rows fit under MaxPendingRows; then every device-used point's
// nearest point of each role is the one of its own time in the batch, and
// nothing is shed. The samples, the skips and the rows left (what prune
// would keep) are then exactly those of the row path, which the
// differential test checks. It reports false, having changed nothing, for
// any other batch.
func (c *Converter) zipBatch(s *series, nowNs int64, emit func(*SampleRun), skip func(Skip)) bool {
	b := s.batch
	n := 1
	for n < len(b) && b[n].role == b[0].role {
		n++
	}
	if len(b)%n != 0 || len(s.rows)+n > c.cfg.MaxPendingRows || s.roleCount[roleDeviceUsed] != 0 {
		return false
	}
	k := len(b) / n
	var roles uint16
	for j := range k {
		bit := uint16(1) << b[j*n].role
		if roles&bit != 0 {
			return false
		}
		roles |= bit
	}
	const usedBit, reservedBit = uint16(1) << roleDeviceUsed, uint16(1) << roleAllocatorReserved
	if roles&usedBit == 0 || roles&reservedBit == 0 {
		return false
	}
	for r, count := range s.roleCount {
		if count != 0 && roles&(1<<r) == 0 {
			return false
		}
	}
	prev := int64(math.MinInt64)
	if len(s.rows) > 0 {
		prev = s.rows[len(s.rows)-1].tsNs
	}
	if s.hasUsed {
		prev = max(prev, s.maxUsedTs)
	}
	times := b[:n]
	for i := range times {
		if times[i].tsNs <= prev {
			return false
		}
		prev = times[i].tsNs
	}
	for j := 1; j < k; j++ {
		run := b[j*n : (j+1)*n]
		r := run[0].role
		for i := range run {
			if run[i].role != r || run[i].tsNs != times[i].tsNs {
				return false
			}
		}
	}

	newest := times[n-1].tsNs
	s.maxUsedTs, s.hasUsed = newest, true
	if !s.hasReserved || newest > s.maxReservedTs {
		s.maxReservedTs, s.hasReserved = newest, true
	}
	s.horizonNs, s.pruned = newest-c.tolNs, true
	// The rows prune would drop: the old ones before the new horizon (none
	// holds a pending point).
	drop := 0
	for drop < len(s.rows) && s.rows[drop].tsNs < s.horizonNs {
		s.forget(&s.rows[drop])
		drop++
	}
	s.rows = s.rows[drop:]

	run := c.startRun(s)
	for i := range times {
		ts := times[i].tsNs
		var vals [numRoles]int64
		for j := range k {
			p := &b[j*n+i]
			vals[p.role] = p.bytes
		}
		c.addSample(run, ts, &vals, roles, skip)
		if ts < s.horizonNs {
			continue
		}
		// The row the row path leaves: its device-used point formed a
		// sample (or was refused as invalid) and left.
		s.insertRow(len(s.rows), ts)
		row := &s.rows[len(s.rows)-1]
		row.vals, row.has, row.formed, row.arrivalNs = vals, roles&^usedBit, true, nowNs
		for has := row.has; has != 0; has &= has - 1 {
			s.roleCount[bits.TrailingZeros16(has)]++
		}
	}
	s.cursor, s.firstPending = len(s.rows)-1, len(s.rows)
	c.fast.zipped++
	c.endRun(run, emit)
	return true
}
