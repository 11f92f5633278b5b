package ingest

import "math/bits"

// dropCounts are metric points a join buffer dropped without a Skip at the
// time: a duplicate is found deep inside add, and a partner point is known
// to be orphaned only when its row leaves. They are reported as Skips
// once the call's points are joined (report), or, for rows Expire drops,
// through Converter.TakeOrphaned.
type dropCounts struct {
	duplicates int
	orphaned   int
}

// partnerRoles are the roles whose points only serve samples formed at a
// device-used point.
const partnerRoles = (uint16(1)<<numRoles - 1) &^ (1 << roleDeviceUsed)

// noteLeaving counts the partner points of a row leaving the buffer that
// no device-used point within the tolerance formed a sample with.
func (d *dropCounts) noteLeaving(row *joinRow) {
	if !row.served {
		d.orphaned += bits.OnesCount16(row.has & partnerRoles)
	}
}

// report hands every counted drop to skip and resets the counts.
func (d *dropCounts) report(skip func(Skip)) {
	for range d.duplicates {
		skip(Skip{Reason: SkipDuplicate, Detail: "a point of this rank, metric and timestamp was already received; the first one is kept"})
	}
	for range d.orphaned {
		skip(Skip{Reason: SkipOrphaned, Detail: "partner point (allocator reserved, device free, ...) left the join buffer with no device-used point of its rank within sample_join_tolerance"})
	}
	*d = dropCounts{}
}

// takeOrphaned returns and resets the orphaned count.
func (d *dropCounts) takeOrphaned() int {
	n := d.orphaned
	d.orphaned = 0
	return n
}

// markServed marks the rows within tol of row i, whose device-used point
// just formed a sample, as having had a partner.
func (s *series) markServed(i int, tol int64) {
	rows := s.rows
	ts := rows[i].tsNs
	rows[i].served = true
	for j := i - 1; j >= 0 && ts-rows[j].tsNs <= tol; j-- {
		rows[j].served = true
	}
	for k := i + 1; k < len(rows) && rows[k].tsNs-ts <= tol; k++ {
		rows[k].served = true
	}
}

// TakeOrphaned returns how many partner points the join buffers dropped in
// Expire without ever having a device-used point within the tolerance,
// and resets the count: the caller counts them as orphaned, as the Skips
// of a Convert call count the others. Call it after Expire.
func (c *Converter) TakeOrphaned() int {
	n := c.metrics.orphaned
	c.metrics.orphaned = 0
	return n
}
