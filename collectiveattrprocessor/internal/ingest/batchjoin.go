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

// zipBlock is the points one series received in a call when they have the
// in-process exporter's shape: k runs of n points, one run per distinct
// role, with device used and allocator reserved among them, every run
// with the same strictly increasing times. Its n collections are
// c.zipRows[off : off+n], each a sample to be: its time and each role's
// value by role (counters; zero for the roles the block lacks). order
// lists the roles in the order their runs arrived, one per bit of roles.
// n is 0 when there is no block.
type zipBlock struct {
	off, n int
	roles  uint16
	order  [numRoles]role
}

func (b *zipBlock) rows(c *Converter) []SamplePoint { return c.zipRows[b.off : b.off+b.n] }

// newZipRows appends n zeroed collections to c.zipRows and returns the
// offset of the first.
func (c *Converter) newZipRows(n int) int {
	off := len(c.zipRows)
	c.zipRows = append(c.zipRows, make([]SamplePoint, n)...)
	return off
}

// joinBatch joins the points s received in this call and hands the samples
// they form to emit. A call's points that form a zip block take the zip
// path when the series' state allows it; any others are added row by row
// (add) and joined by formSamples, exactly as the points arrived.
func (c *Converter) joinBatch(s *series, nowNs int64, emit func(*SampleRun), skip func(Skip)) {
	defer s.dropped.report(skip)
	if blk := s.block; blk.n > 0 {
		// Read in lockstep: s.batch is empty.
		s.block = zipBlock{}
		if c.zipBlock(s, &blk, nowNs, emit, skip) {
			return
		}
		c.spill(s, &blk)
	} else if !c.noZip {
		if blk, ok := c.blockOf(s.batch); ok && c.zipBlock(s, &blk, nowNs, emit, skip) {
			s.batch = keptScratch(s.batch)
			return
		}
	}
	for _, p := range s.batch {
		c.shed(s.add(p.role, p.tsNs, p.bytes, nowNs, c.cfg.MaxPendingRows), skip)
	}
	c.formSamples(s, emit, skip)
	s.batch = keptScratch(s.batch)
}

// spill puts a block's points in s.batch as they arrived, a run after
// another, for the row path.
func (c *Converter) spill(s *series, blk *zipBlock) {
	c.fast.spilled++
	rows := blk.rows(c)
	for _, r := range blk.order[:bits.OnesCount16(blk.roles)] {
		for i := range rows {
			s.batch = append(s.batch, batchPoint{tsNs: rows[i].TimestampNs, bytes: rows[i].counters()[r], role: r})
		}
	}
}

// blockOf returns the zip block of a call's points b, in arrival order,
// when they have its shape.
func (c *Converter) blockOf(b []batchPoint) (zipBlock, bool) {
	var blk zipBlock
	n := 1
	for n < len(b) && b[n].role == b[0].role {
		n++
	}
	if len(b) == 0 || len(b)%n != 0 {
		return blk, false
	}
	k := len(b) / n
	var roles uint16
	for j := range k {
		r := b[j*n].role
		bit := uint16(1) << r
		if roles&bit != 0 {
			return blk, false
		}
		roles |= bit
		blk.order[j] = r
	}
	if !zippable(roles) {
		return blk, false
	}
	times := b[:n]
	for i := 1; i < n; i++ {
		if times[i].tsNs <= times[i-1].tsNs {
			return blk, false
		}
	}
	for j := 1; j < k; j++ {
		run := b[j*n : (j+1)*n]
		r := run[0].role
		for i := range run {
			if run[i].role != r || run[i].tsNs != times[i].tsNs {
				return blk, false
			}
		}
	}
	blk.off, blk.n, blk.roles = c.newZipRows(n), n, roles
	rows := blk.rows(c)
	for i := range rows {
		rows[i].TimestampNs = times[i].tsNs
	}
	for j := range k {
		run := b[j*n : (j+1)*n]
		r := run[0].role
		for i := range run {
			rows[i].counters()[r] = run[i].bytes
		}
	}
	return blk, true
}

// zippable reports whether a block of these roles can form samples on its
// own: it holds device used and allocator reserved.
func zippable(roles uint16) bool {
	const want = uint16(1)<<roleDeviceUsed | uint16(1)<<roleAllocatorReserved
	return roles&want == want
}

// zipBlock forms the samples of a block without building the rows first,
// when s's state allows it: every time of the block is after the series'
// newest row and device-used time, the series holds no pending device-used
// point and no point of a role the block lacks, and n more rows fit under
// MaxPendingRows. Then every device-used point's nearest point of each role
// is the one of its own time in the block, and nothing is shed. The
// samples, the skips and the rows left (what prune would keep) are then
// exactly those of the row path, which the differential test checks. It
// reports false, having changed nothing, otherwise.
func (c *Converter) zipBlock(s *series, blk *zipBlock, nowNs int64, emit func(*SampleRun), skip func(Skip)) bool {
	rows := blk.rows(c)
	n := len(rows)
	if len(s.rows)+n > c.cfg.MaxPendingRows || s.roleCount[roleDeviceUsed] != 0 {
		return false
	}
	for r, count := range s.roleCount {
		if count != 0 && blk.roles&(1<<r) == 0 {
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
	if rows[0].TimestampNs <= prev {
		return false
	}

	const usedBit = uint16(1) << roleDeviceUsed
	newest := rows[n-1].TimestampNs
	s.maxUsedTs, s.hasUsed = newest, true
	if !s.hasReserved || newest > s.maxReservedTs {
		s.maxReservedTs, s.hasReserved = newest, true
	}
	s.horizonNs, s.pruned = newest-c.tolNs, true
	// Every row of the block forms (or is refused as) a sample: the old rows
	// within the tolerance of its first had a device-used partner, as the
	// row path's markServed finds before its prune.
	for j := len(s.rows) - 1; j >= 0 && rows[0].TimestampNs-s.rows[j].tsNs <= c.tolNs; j-- {
		s.rows[j].served = true
	}
	// The rows prune would drop: the old ones before the new horizon (none
	// holds a pending point).
	drop := 0
	for drop < len(s.rows) && s.rows[drop].tsNs < s.horizonNs {
		s.forget(&s.rows[drop])
		drop++
	}
	s.rows = s.rows[drop:]

	// The samples are formed in place: the run hands over the block's
	// rows, those refused as invalid left out.
	formed := 0
	for i := range rows {
		p := &rows[i]
		if ts := p.TimestampNs; ts >= s.horizonNs {
			// The row the row path leaves, of the points as they came: its
			// device-used point formed a sample (or was refused as
			// invalid) and left.
			s.insertRow(len(s.rows), ts)
			row := &s.rows[len(s.rows)-1]
			row.vals, row.has, row.formed, row.served, row.arrivalNs = *p.counters(), blk.roles&^usedBit, true, true, nowNs
			for has := row.has; has != 0; has &= has - 1 {
				s.roleCount[bits.TrailingZeros16(has)]++
			}
		}
		if c.formSample(p, blk.roles, skip) {
			if formed != i {
				rows[formed] = *p
			}
			formed++
		}
	}
	s.cursor, s.firstPending = len(s.rows)-1, len(s.rows)
	c.fast.zipped++
	if formed > 0 {
		run := c.startRun(s)
		scratch := run.Samples
		run.Samples = rows[:formed:formed] // the arena's next blocks are not the handler's
		emit(run)
		run.Samples = scratch
	}
	return true
}
