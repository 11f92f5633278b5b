package window

import (
	"unsafe"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// A file of a job of thousands of ranks holds each record for another rank
// than the last, so the lines of the rank a record is added to (its hot
// fields, its samples' column ends) have left the caches since its
// previous record, thousands of records earlier, and each is a miss that
// stalls the record. AddEvents asks for them a few records ahead instead:
// first the rank's hot fields, then, once those have arrived, the ends of
// its sample columns, which the hot fields locate. A prefetch changes no
// state; it only moves the misses to where they overlap other work.
const (
	rankLinesAhead  = 8
	columnEndsAhead = 4
)

// rankHotBytes is the size of the fields at the front of a Rank that a
// record reads and writes.
const rankHotBytes = unsafe.Offsetof(Rank{}.markers)

// prefetchRank asks for the lines of rank r's hot fields.
func (j *Job) prefetchRank(r int64) {
	rb := j.rankIfIndexed(r)
	if rb == nil {
		return
	}
	p := uintptr(unsafe.Pointer(rb))
	for off := uintptr(0); off < rankHotBytes; off += 64 {
		prefetch(p + off)
	}
}

// prefetchColumnEnds asks for the lines rank r's next sample is written
// to, its columns' ends, and in evidence mode its evidence state.
func (j *Job) prefetchColumnEnds(r int64) {
	rb := j.rankIfIndexed(r)
	if rb == nil {
		return
	}
	c := &rb.samples
	if n := len(c.ts); n > 0 && c.n < n {
		i := c.head + c.n
		if i >= n {
			i -= n
		}
		prefetch(uintptr(unsafe.Pointer(&c.ts[i])))
		if i < len(c.aux) {
			prefetch(uintptr(unsafe.Pointer(&c.aux[i])))
		}
	}
	if rb.ev != nil {
		prefetch(uintptr(unsafe.Pointer(rb.ev)))
	}
}

// rankIfIndexed is Rank for the ranks held by index (no map lookup, which
// would cost more than the miss it saves).
func (j *Job) rankIfIndexed(r int64) *Rank {
	if uint64(r) < uint64(len(j.byRank)) {
		return j.byRank[r]
	}
	return nil
}

// AddEvents buffers events in order, each as Add does.
func (s *Stream) AddEvents(events []telemetry.Event) {
	for i := range events {
		if k := i + rankLinesAhead; k < len(events) {
			s.job.prefetchRank(events[k].Rank)
		}
		if k := i + columnEndsAhead; k < len(events) {
			s.job.prefetchColumnEnds(events[k].Rank)
		}
		s.Add(&events[i])
	}
}
