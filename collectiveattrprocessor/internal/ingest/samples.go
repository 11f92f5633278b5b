package ingest

import (
	"math"
	"math/bits"
	"slices"
)

// role is the TelemetryEvent field a metric feeds (contract §3.1).
type role uint8

const (
	roleDeviceUsed role = iota
	roleDeviceFree
	roleDeviceTotal
	roleAllocatorReserved
	roleAllocatorAllocated
	roleAllocatorActive
	roleAllocatorInactive
	roleDeviceReserved
	// roleProcessUsed is the rank's own process's GPU memory. A rank that
	// reports it has its points buffered as roleDeviceUsed, and its
	// device-used points as roleDeviceWideUsed (series.perProcess).
	roleProcessUsed
	// roleDeviceWideUsed is a device-used point of a rank whose samples are
	// its process's: it only completes DCGM's device total.
	roleDeviceWideUsed
	numRoles
)

// SampleCollector is the collector string of samples formed from metrics.
const SampleCollector = "collectiveattr.metrics"

type seriesKey struct {
	job  string
	rank int64
}

// joinRow is what a series holds for one timestamp: at most one point per
// role. Points of one SDK collection share a timestamp, so a row usually
// holds them all and a sample is formed from one row without a search.
type joinRow struct {
	tsNs int64
	// arrivalNs is the wall clock of the row's newest point: the pending
	// TTL counts from it.
	arrivalNs int64
	vals      [numRoles]int64
	// has has bit r set when a point of role r is buffered. A device-used
	// point leaves it when it forms a sample (or is given up).
	has uint16
	// formed says the row's device-used point already formed a sample or was
	// given up: a device-used point of the same time arriving later (a
	// resent point) is a duplicate.
	formed bool
	// served says a device-used point within the join tolerance formed a
	// sample, so the row's partner points had one: when a row leaves
	// without it, they are counted as orphaned.
	served bool
	// session is the index in the series' session table of the process
	// that sent the row's allocator-reserved point: the session of the
	// samples it joins (docs/evidence-mode.md §7.1).
	session uint8
}

// series is the as-of join state of one (job, rank): its recent points as
// rows sorted by time, one row per distinct timestamp. Device-used points
// leave when they form a sample; other points stay (they may serve several
// samples) until the row bound or the pending TTL pushes their row out.
type series struct {
	key       seriesKey
	host      string
	worldSize int64
	localRank int64
	hasLocal  bool
	deviceID  int64
	// perProcess says the rank reports its own process's GPU memory: those
	// points form its samples, and its device-wide used points (its own,
	// or DCGM's joined to it), which include other processes' contexts on
	// the GPU, form none (docs/gpu-metrics-join.md).
	perProcess bool

	// rows is a window of store: shedding the oldest rows only moves its
	// start, and rows move back to the front of store only when they reach
	// its end.
	rows  []joinRow
	store []joinRow
	// roleCount is the number of rows holding a point of each role, so that
	// a role no row holds (allocator active/inactive are often absent) costs
	// no search.
	roleCount [numRoles]int32
	// cursor is the index of the row the previous point went to: the next
	// point usually goes to the row after it (one metric's points in time
	// order) or to a new last row.
	cursor int
	// firstPending is a lower bound of the index of the first row with a
	// pending device-used point.
	firstPending int
	// maxReservedTs is the newest allocator-reserved time seen: reserved points
	// of one source arrive in time order, so a device-used point older than it
	// by more than the tolerance, with no partner, will never get one.
	maxReservedTs int64
	hasReserved   bool
	// maxUsedTs is the newest device-used time seen. Device-used points of
	// one (job, rank) arrive in time order too (within a batch any order is
	// fine): after a batch, one older than maxUsedTs - tolerance (horizonNs;
	// resent, or from a second, lagging source) is refused as unjoinable, so
	// rows that old can serve no future sample and are dropped (prune). In
	// the common case a series holds a few rows, not a window.
	maxUsedTs int64
	hasUsed   bool
	horizonNs int64
	pruned    bool
	// touchedGen is the metricsConverter call (gen) that last added a point, so that
	// each batch forms samples only for the series it touched.
	touchedGen uint64
	// direct is 1 + the index in metricsConverter.directs of the points of
	// the current call held aside for it (directjoin.go), 0 when none.
	direct int
	// batch is the points of the current call, in arrival order, buffered
	// at its end (joinBatch) when they cannot be as they are read
	// (metricsConverter.addNow).
	batch []batchPoint
	// shedUsed counts the device-used points the current call's points
	// pushed out of rows unjoined, reported at its end.
	shedUsed int
	// dropped counts the points dropped silently until reported
	// (dropcounts.go).
	dropped dropCounts
	// sessions are the sessions (processes) of the buffered points, by
	// index; index 0 is a point whose process is unknown (nil: none yet).
	sessions []string
	// lastProcess is the process of the series' latest identity and its
	// index in sessions.
	lastProcess processIndex
}

// processIndex is a process and its index in a series' session table.
type processIndex struct {
	key   processKey
	index uint8
	valid bool
}

// sessionIndex returns the index of session in the session table, adding
// it. A full table (more processes than an index holds, in points of one
// call) files a new process as unknown; compactSessions keeps the table to
// the sessions of buffered rows between calls.
func (s *series) sessionIndex(session string) uint8 {
	for i := 1; i < len(s.sessions); i++ {
		if s.sessions[i] == session {
			return uint8(i)
		}
	}
	if len(s.sessions) == 0 {
		s.sessions = append(s.sessions, "")
	}
	if len(s.sessions) > math.MaxUint8 {
		return 0
	}
	s.sessions = append(s.sessions, session)
	return uint8(len(s.sessions) - 1)
}

// compactSessionsAt is the session table size from which, after a call,
// the sessions no buffered row refers to are dropped.
const compactSessionsAt = 16

// compactSessions drops the sessions no row refers to.
func (s *series) compactSessions() {
	var remap [math.MaxUint8 + 1]uint8
	var used [math.MaxUint8 + 1]bool
	for i := range s.rows {
		used[s.rows[i].session] = true
	}
	kept := s.sessions[:1]
	for i := 1; i < len(s.sessions); i++ {
		if used[i] {
			remap[i] = uint8(len(kept))
			kept = append(kept, s.sessions[i])
		}
	}
	clear(s.sessions[len(kept):])
	s.sessions = kept
	s.lastProcess.valid = false
	for i := range s.rows {
		s.rows[i].session = remap[s.rows[i].session]
	}
}

// sessionName is the session of index i of a sample of s: the job id
// stands in for an unknown process.
func (s *series) sessionName(i uint8) string {
	if i == 0 || int(i) >= len(s.sessions) {
		return s.key.job
	}
	return s.sessions[i]
}

func (s *series) empty() bool { return len(s.rows) == 0 }

// pendingPoints is the number of buffered points.
func (s *series) pendingPoints() int {
	n := 0
	for _, c := range s.roleCount {
		n += int(c)
	}
	return n
}

func (s *series) updateIdentity(id *identity) {
	if id.host != "" && id.host != s.host {
		s.host = id.host // interned by the caller
	}
	if id.worldSize > 0 {
		s.worldSize = id.worldSize
	}
	if id.hasLocal {
		s.localRank, s.hasLocal = id.localRank, true
	}
	if id.devIndex >= 0 {
		s.deviceID = id.devIndex
	}
}

// late reports whether a point of role r at ts is a point that forms
// samples (device used, or the process's own once the rank reports it)
// before the horizon.
func (s *series) late(r role, ts int64) bool {
	return r == s.sampleRole() && s.pruned && ts < s.horizonNs
}

// sampleRole is the role of the metric points that form the rank's
// samples.
func (s *series) sampleRole() role {
	if s.perProcess {
		return roleProcessUsed
	}
	return roleDeviceUsed
}

// bufferedRole is the role a point of metric role r is buffered as: for a
// rank that reports its process's memory, that memory is the used memory
// of its samples, and device-wide used memory only completes a total.
func (s *series) bufferedRole(r role) role {
	if s.perProcess {
		switch r {
		case roleProcessUsed:
			return roleDeviceUsed
		case roleDeviceUsed:
			return roleDeviceWideUsed
		}
	}
	return r
}

// becomePerProcess turns s into a series whose samples are its process's:
// its pending device-used points are device-wide and will form no sample
// (they may still complete a total), and the horizon of device-used times
// starts again with the process's points.
func (s *series) becomePerProcess() {
	s.perProcess = true
	const usedBit, wideBit = uint16(1) << roleDeviceUsed, uint16(1) << roleDeviceWideUsed
	for i := range s.rows {
		row := &s.rows[i]
		if row.has&usedBit == 0 {
			continue
		}
		row.has &^= usedBit
		s.roleCount[roleDeviceUsed]--
		if row.has&wideBit == 0 {
			row.has |= wideBit
			row.vals[roleDeviceWideUsed] = row.vals[roleDeviceUsed]
			s.roleCount[roleDeviceWideUsed]++
		}
		row.vals[roleDeviceUsed] = 0
	}
	s.maxUsedTs, s.hasUsed, s.pruned, s.firstPending = 0, false, false, 0
}

// find returns the index of the row of time ts, or where it would be
// inserted. It tries the row after the previous point's first: the answer
// is exact whatever the cursor, which only chooses where to look first.
func (s *series) find(ts int64) (int, bool) {
	rows := s.rows
	n := len(rows)
	if n == 0 || ts > rows[n-1].tsNs {
		return n, false
	}
	if i := s.cursor + 1; i >= 0 && i < n && rows[i].tsNs == ts {
		return i, true
	}
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if rows[m].tsNs < ts {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < n && rows[lo].tsNs == ts
}

// add buffers a point of role r. The first point of a (time, role) wins: a
// later one, a resent point, is ignored. When the series holds maxRows rows
// its oldest quarter is dropped at once; add returns how many device-used
// points were dropped that way without a sample.
func (s *series) add(r role, ts, bytes, arrivalNs int64, session uint8, maxRows int) (droppedUsed int) {
	switch {
	case r == roleAllocatorReserved && (!s.hasReserved || ts > s.maxReservedTs):
		s.maxReservedTs, s.hasReserved = ts, true
	case r == roleDeviceUsed && (!s.hasUsed || ts > s.maxUsedTs):
		s.maxUsedTs, s.hasUsed = ts, true
	}
	bit := uint16(1) << r
	// The row after the previous point's is the usual answer (one metric's
	// points in time order); find checks it again, but only after a call.
	i := s.cursor + 1
	if uint(i) >= uint(len(s.rows)) || s.rows[i].tsNs != ts {
		var found bool
		if i, found = s.find(ts); !found {
			if len(s.rows) >= maxRows {
				n := max(1, len(s.rows)/4)
				droppedUsed = s.shed(n)
				i = max(0, i-n)
			}
			s.insertRow(i, ts)
		}
	}
	row := &s.rows[i]
	s.cursor = i
	if row.has&bit != 0 || (r == roleDeviceUsed && row.formed) {
		s.dropped.duplicates++
		return droppedUsed
	}
	row.has |= bit
	row.vals[r] = bytes
	if r == roleAllocatorReserved {
		row.session = session
	}
	row.arrivalNs = max(row.arrivalNs, arrivalNs)
	s.roleCount[r]++
	if r == roleDeviceUsed {
		s.firstPending = min(s.firstPending, i)
	}
	return droppedUsed
}

// insertRow inserts an empty row of time ts at index i, keeping the rows in
// time order.
func (s *series) insertRow(i int, ts int64) {
	n := len(s.rows)
	if i == n && n < cap(s.rows) {
		// A new newest row, the common case: no move.
		s.rows = s.rows[:n+1]
		s.rows[n] = joinRow{tsNs: ts}
		return
	}
	if n == cap(s.rows) {
		if len(s.store) > 0 && 2*n <= len(s.store) {
			// Room at the front of store: move the rows back there.
			copy(s.store, s.rows)
		} else {
			store := make([]joinRow, max(8, 2*len(s.store)))
			copy(store, s.rows)
			s.store = store
		}
		s.rows = s.store[:n]
	}
	s.rows = s.rows[:n+1]
	copy(s.rows[i+1:], s.rows[i:n])
	s.rows[i] = joinRow{tsNs: ts}
	// firstPending stays a lower bound: the new row holds no device-used
	// point yet (add lowers the bound when it gets one).
}

// shed drops the n oldest rows and returns how many pending device-used
// points they held.
func (s *series) shed(n int) (droppedUsed int) {
	for i := range s.rows[:n] {
		droppedUsed += s.forget(&s.rows[i])
	}
	s.rows = s.rows[n:]
	s.cursor -= n
	s.firstPending = max(0, s.firstPending-n)
	return droppedUsed
}

// forget removes row's points from the role counts; it returns 1 when the
// row held a pending device-used point.
func (s *series) forget(row *joinRow) (pendingUsed int) {
	for has := row.has; has != 0; has &= has - 1 {
		s.roleCount[bits.TrailingZeros16(has)]--
	}
	s.dropped.noteLeaving(row)
	if row.has&(1<<roleDeviceUsed) != 0 {
		return 1
	}
	return 0
}

// nearestRow returns the row of the point of r closest in time to row i's
// time within tol (ties: the earlier point). Rows are sorted and hold one
// point per role, so the nearest is in row i itself, the last row before it
// holding r, or the first after it.
func (s *series) nearestRow(i int, r role, tol int64) (int, bool) {
	rows := s.rows
	bit := uint16(1) << r
	if rows[i].has&bit != 0 {
		return i, true
	}
	if s.roleCount[r] == 0 {
		return 0, false
	}
	ts := rows[i].tsNs
	before := -1
	for j := i - 1; j >= 0 && ts-rows[j].tsNs <= tol; j-- {
		if rows[j].has&bit != 0 {
			before = j
			break
		}
	}
	for k := i + 1; k < len(rows) && rows[k].tsNs-ts <= tol; k++ {
		if rows[k].has&bit != 0 {
			if before < 0 || rows[k].tsNs-ts < ts-rows[before].tsNs {
				return k, true
			}
			break
		}
	}
	if before < 0 {
		return 0, false
	}
	return before, true
}

// formSamples turns every buffered device-used point that has an
// allocator-reserved partner within tol into a sample, in time order, and
// hands them to emit as one run. Points that can no longer be joined are
// dropped and reported as unjoinable; the rest stay pending.
func (c *metricsConverter) formSamples(s *series, emit func(*SampleRun), skip func(Skip)) {
	tol := c.tolNs
	const usedBit = uint16(1) << roleDeviceUsed
	run := c.startRun(s, 0)
	firstPending := len(s.rows)
	for i := s.firstPending; i < len(s.rows); i++ {
		row := &s.rows[i]
		if row.has&usedBit == 0 {
			continue
		}
		partner, ok := s.nearestRow(i, roleAllocatorReserved, tol)
		if !ok {
			if s.hasReserved && s.maxReservedTs > row.tsNs+tol {
				c.stats.UnjoinedPoints++
				skip(Skip{Reason: SkipUnjoinable, Detail: "device-used point has no allocator-reserved point within sample_join_tolerance"})
				s.consumeUsed(row)
				continue
			}
			firstPending = min(firstPending, i)
			continue
		}
		if session := s.rows[partner].session; session != run.session {
			// A new process: its samples are a run of their own.
			c.endRun(run, emit)
			run = c.startRun(s, session)
		}
		var vals [numRoles]int64
		has := s.joined(i, s.rows[partner].vals[roleAllocatorReserved], tol, &vals)
		s.consumeUsed(row)
		s.markServed(i, tol)
		// The sample is formed in place and taken back if invalid.
		n := len(run.Samples)
		run.Samples = slices.Grow(run.Samples, 1)[:n+1]
		p := &run.Samples[n]
		p.TimestampNs = row.tsNs
		if !c.formSample(p, &vals, has, skip) {
			run.Samples = run.Samples[:n]
		} else if s.perProcess {
			p.Has |= HasProcessUsed
		}
	}
	s.firstPending = firstPending
	s.prune(tol)
	c.endRun(run, emit)
	if len(s.sessions) >= compactSessionsAt {
		s.compactSessions()
	}
}

// joined writes to vals the values of a sample of row i's device-used
// point: per role the nearest point within tol, reserved as given; it
// returns the roles found. The driver-reserved framebuffer is looked up
// only when formSample needs it.
func (s *series) joined(i int, reserved, tol int64, vals *[numRoles]int64) (has uint16) {
	row := &s.rows[i]
	vals[roleDeviceUsed] = row.vals[roleDeviceUsed]
	vals[roleAllocatorReserved] = reserved
	has = 1<<roleDeviceUsed | 1<<roleAllocatorReserved
	for _, r := range [...]role{roleDeviceFree, roleDeviceTotal, roleAllocatorAllocated, roleAllocatorActive, roleAllocatorInactive} {
		// The row's own point, or no point of r at all, the common cases,
		// without a call.
		if row.has&(1<<r) != 0 {
			vals[r], has = row.vals[r], has|1<<r
		} else if s.roleCount[r] != 0 {
			if j, ok := s.nearestRow(i, r, tol); ok {
				vals[r], has = s.rows[j].vals[r], has|1<<r
			}
		}
	}
	if has&(1<<roleDeviceTotal) == 0 && has&(1<<roleDeviceFree) != 0 {
		for _, r := range [...]role{roleDeviceReserved, roleDeviceWideUsed} {
			if j, ok := s.nearestRow(i, r, tol); ok {
				vals[r], has = s.rows[j].vals[r], has|1<<r
			}
		}
	}
	return has
}

// prune moves the horizon to the newest device-used time minus tol and
// drops the leading rows before it that hold no pending device-used point.
func (s *series) prune(tol int64) {
	if !s.hasUsed {
		return
	}
	s.horizonNs, s.pruned = s.maxUsedTs-tol, true
	k := 0
	for k < len(s.rows) && k < s.firstPending && s.rows[k].tsNs < s.horizonNs {
		s.forget(&s.rows[k])
		k++
	}
	if k > 0 {
		s.rows = s.rows[k:]
		s.cursor -= k
		s.firstPending -= k
	}
}

// consumeUsed takes row's device-used point out of the buffer once it formed
// a sample or was given up.
func (s *series) consumeUsed(row *joinRow) {
	row.has &^= 1 << roleDeviceUsed
	row.formed = true
	s.roleCount[roleDeviceUsed]--
}

// startRun readies the run for the samples of s of session (an index in
// its session table).
func (c *metricsConverter) startRun(s *series, session uint8) *SampleRun {
	run := &c.run
	localRank := s.key.rank
	if s.hasLocal {
		localRank = s.localRank
	}
	*run = SampleRun{
		JobID: s.key.job, Session: s.sessionName(session), Rank: s.key.rank, WorldSize: s.worldSize, Host: s.host,
		LocalRank: localRank, DeviceID: s.deviceID, Samples: run.Samples[:0], session: session,
	}
	return run
}

// endRun hands a run with samples to emit.
func (c *metricsConverter) endRun(run *SampleRun, emit func(*SampleRun)) {
	if len(run.Samples) > 0 {
		emit(run)
	}
	run.Samples = keptScratch(run.Samples)
}

// maxDeviceBytes bounds one device's memory when its total is not reported:
// 64 TiB, over a hundred times the largest accelerator's, so that only a
// corrupt value (a petabyte) is refused.
const maxDeviceBytes = 1 << 46

const deviceUsedAboveAnyDevice = "device used memory exceeds 64 TiB, more than any device holds (its total is not reported)"

// formSample turns v, the joined values of a sample's roles (has: the
// roles present; device used and allocator reserved always are), into the
// counters of p; it reports false, having skipped it as invalid, when the
// values contradict each other. Absent roles must hold 0.
func (c *metricsConverter) formSample(p *SamplePoint, v *[numRoles]int64, has uint16, skip func(Skip)) bool {
	hasFree := has&(1<<roleDeviceFree) != 0
	hasTotal := has&(1<<roleDeviceTotal) != 0
	if !hasTotal && hasFree && has&(1<<roleDeviceReserved) != 0 {
		// DCGM reports used, free and the driver-reserved framebuffer but no
		// total by default: their sum is the framebuffer size. Used is the
		// whole device's: a rank reporting its process's memory has DCGM's
		// as device-wide used.
		used := v[roleDeviceUsed]
		if has&(1<<roleDeviceWideUsed) != 0 {
			used = v[roleDeviceWideUsed]
		}
		v[roleDeviceTotal], hasTotal = used+v[roleDeviceFree]+v[roleDeviceReserved], true
	}
	if hasTotal && (v[roleDeviceUsed] > v[roleDeviceTotal] || (hasFree && v[roleDeviceFree] > v[roleDeviceTotal])) {
		skip(Skip{Reason: SkipInvalidValue, Detail: "device used or free memory exceeds device total"})
		return false
	}
	if !hasTotal && v[roleDeviceUsed] > maxDeviceBytes {
		skip(Skip{Reason: SkipInvalidValue, Detail: deviceUsedAboveAnyDevice})
		return false
	}
	if has&(1<<roleAllocatorAllocated) == 0 {
		v[roleAllocatorAllocated] = v[roleAllocatorReserved] // the reference's legacy loader does the same
	}
	var opt OptionalCounters
	if hasFree {
		opt |= HasDeviceFree
	}
	if hasTotal {
		opt |= HasDeviceTotal
	}
	if has&(1<<roleAllocatorActive) != 0 {
		opt |= HasAllocatorActive
	}
	if has&(1<<roleAllocatorInactive) != 0 {
		opt |= HasAllocatorInactive
	}
	p.Has = opt
	p.setCounters(v)
	return true
}

// expire drops rows whose newest point waited longer than the pending TTL;
// it returns how many device-used points left without forming a sample.
func (s *series) expire(cutoffNs int64) (unjoined int) {
	kept := s.rows[:0]
	for i := range s.rows {
		if s.rows[i].arrivalNs >= cutoffNs {
			kept = append(kept, s.rows[i])
		} else {
			unjoined += s.forget(&s.rows[i])
		}
	}
	s.rows = kept
	s.cursor, s.firstPending = 0, 0
	return unjoined
}
