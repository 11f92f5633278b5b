package window

// sampleColumns are a rank's buffered samples: times and hidden-memory gaps
// as columns, the device total and the session as runs (a rank reports
// one total and one session, or a few over restarts), so that a sample
// costs its time and its gap.
//
// Samples are numbered in push order; seq is the number of the next one,
// and the front sample is seq - len(). A run holds from its sample on,
// until the next run's.
type sampleColumns struct {
	timedRing[int64] // times, and gaps as aux
	seq              uint64
	totals           []totalRun
	sessions         []sessionRun
}

type totalRun struct {
	from  uint64
	value int64
}

type sessionRun struct {
	from    uint64
	session uint32 // index in the rank's session table
}

// push buffers a sample; total <= 0 is an unknown total.
func (c *sampleColumns) push(ts, gap, total int64, session uint32, maxCap int) {
	if total < 0 {
		total = 0
	}
	if n := len(c.totals); n == 0 && total != 0 || n > 0 && c.totals[n-1].value != total {
		c.totals = append(c.totals, totalRun{from: c.seq, value: total})
	}
	if n := len(c.sessions); n == 0 || c.sessions[n-1].session != session {
		c.sessions = append(c.sessions, sessionRun{from: c.seq, session: session})
	}
	c.timedRing.push(ts, gap, maxCap)
	c.seq++
}

// pushRun buffers samples from to to of session (the i-th is sample(i))
// with a push each, and returns the first's and the last's times. The
// storage grows once, to the size the pushes would grow it to. The caller
// makes room first: the run must fit in maxCap.
func (c *sampleColumns) pushRun(from, to int, session uint32, maxCap int, sample func(i int) (ts, gap, total int64)) (firstNs, lastNs int64) {
	if to <= from {
		return 0, 0
	}
	c.reserve(to-from, maxCap)
	for i := from; i < to; i++ {
		ts, gap, total := sample(i)
		if i == from {
			firstNs = ts
		}
		c.push(ts, gap, total, session, maxCap)
		lastNs = ts
	}
	return firstNs, lastNs
}

// frontSeq is the number of the oldest buffered sample.
func (c *sampleColumns) frontSeq() uint64 { return c.seq - uint64(c.n) }

// dropFront drops the k oldest samples and the runs no sample is in.
func (c *sampleColumns) dropFront(k int) {
	if k <= 0 {
		return
	}
	c.timedRing.dropFront(k)
	front := c.frontSeq()
	c.totals = dropRuns(c.totals, front, func(r totalRun) uint64 { return r.from })
	c.sessions = dropRuns(c.sessions, front, func(r sessionRun) uint64 { return r.from })
}

// dropRuns drops the runs that end at or before sample front: all but the
// last one starting at or before it.
func dropRuns[R any](runs []R, front uint64, from func(R) uint64) []R {
	k := 0
	for k+1 < len(runs) && from(runs[k+1]) <= front {
		k++
	}
	if k == 0 {
		return runs
	}
	if k == len(runs)-1 && cap(runs) > 64 {
		// A long table shrinks once most of it is gone.
		return append(make([]R, 0, 4), runs[k:]...)
	}
	return runs[k:]
}

// totalAt returns the total of the i-th oldest sample (0: unknown).
func (c *sampleColumns) totalAt(i int) int64 {
	seq := c.frontSeq() + uint64(i)
	v := int64(0)
	for _, r := range c.totals {
		if r.from > seq {
			break
		}
		v = r.value
	}
	return v
}

// sessionAt returns the session index of the i-th oldest sample.
func (c *sampleColumns) sessionAt(i int) uint32 {
	seq := c.frontSeq() + uint64(i)
	var v uint32
	for _, r := range c.sessions {
		if r.from > seq {
			break
		}
		v = r.session
	}
	return v
}
