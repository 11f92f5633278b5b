package ingest

import (
	"github.com/collectiveattr/collectiveattr/telemetry"
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
	numRoles
)

// SampleCollector is the collector string of samples formed from metrics.
const SampleCollector = "collectiveattr.metrics"

// point is one metric value waiting in a join buffer.
type point struct {
	tsNs      int64
	bytes     int64
	arrivalNs int64 // wall clock when it was converted
}

type seriesKey struct {
	job  string
	rank int64
}

// series is the as-of join state of one (job, rank): a small buffer of recent
// points per role. Device-used points leave the buffer when they form a
// sample; other points stay (they may serve several samples) until the
// buffer bound or the pending TTL pushes them out.
type series struct {
	key       seriesKey
	host      string
	worldSize int64
	localRank int64
	hasLocal  bool
	deviceID  int64

	pts [numRoles][]point
	// cursor is lowerBound's previous answer per role, where its next
	// search starts.
	cursor [numRoles]int
	// maxReservedTs is the newest allocator-reserved time seen: reserved points
	// of one source arrive in time order, so a device-used point older than it
	// by more than the tolerance, with no partner, will never get one.
	maxReservedTs int64
	hasReserved   bool
	// touchedGen is the Converter generation that last added a point, so that
	// each batch forms samples only for the series it touched.
	touchedGen uint64
}

func (s *series) empty() bool {
	for r := range s.pts {
		if len(s.pts[r]) > 0 {
			return false
		}
	}
	return true
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

// add buffers p under r, keeping the buffer sorted by time (ties in arrival
// order; in-order data appends). When the buffer is full its oldest quarter
// is dropped at once, so the shift is paid once per maxPending/4 points; it
// returns how many device-used points were dropped without a sample.
func (s *series) add(r role, p point, maxPending int) (droppedUsed int) {
	buf := s.pts[r]
	if len(buf) >= maxPending {
		n := max(1, len(buf)/4)
		copy(buf, buf[n:])
		clear(buf[len(buf)-n:])
		buf = buf[:len(buf)-n]
		if r == roleDeviceUsed {
			droppedUsed = n
		}
	}
	buf = append(buf, p)
	for i := len(buf) - 1; i > 0 && buf[i-1].tsNs > p.tsNs; i-- {
		buf[i-1], buf[i] = buf[i], buf[i-1]
	}
	s.pts[r] = buf
	if r == roleAllocatorReserved && (!s.hasReserved || p.tsNs > s.maxReservedTs) {
		s.maxReservedTs, s.hasReserved = p.tsNs, true
	}
	return droppedUsed
}

// nearest returns the value of the point of r closest in time to ts within
// tol (ties: the earlier point; among points of one time, the first
// buffered). The buffer is sorted, so the nearest is the last point before
// ts or the first at or after it.
func (s *series) nearest(r role, ts, tol int64) (int64, bool) {
	buf := s.pts[r]
	if len(buf) == 0 {
		return 0, false
	}
	i := s.lowerBound(r, ts)
	if j := i - 1; j >= 0 && ts-buf[j].tsNs <= tol && (i == len(buf) || buf[i].tsNs-ts >= ts-buf[j].tsNs) {
		for j > 0 && buf[j-1].tsNs == buf[j].tsNs {
			j--
		}
		return buf[j].bytes, true
	}
	if i < len(buf) && buf[i].tsNs-ts <= tol {
		return buf[i].bytes, true
	}
	return 0, false
}

// cursorSteps is how far lowerBound walks from its previous answer before
// it falls back to a binary search.
const cursorSteps = 4

// lowerBound returns the index of the first point of r at or after ts. It
// starts from its previous answer for r: samples are formed in time order
// and points arrive in time order, so the answer moves forward by a step or
// two. The answer is exact whatever the buffer did since (appends, shed
// quarters, expiry): the cursor only chooses where the search starts.
func (s *series) lowerBound(r role, ts int64) int {
	buf := s.pts[r]
	i := min(s.cursor[r], len(buf))
	lo, hi := i, len(buf)
	if i > 0 && buf[i-1].tsNs >= ts {
		lo, hi = 0, i-1 // the answer is before the cursor
	} else {
		for range cursorSteps {
			if i == len(buf) || buf[i].tsNs >= ts {
				s.cursor[r] = i
				return i
			}
			i++
		}
		lo = i
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if buf[m].tsNs < ts {
			lo = m + 1
		} else {
			hi = m
		}
	}
	s.cursor[r] = lo
	return lo
}

func opt(v int64, ok bool) telemetry.OptInt { return telemetry.OptInt{Value: v, Valid: ok} }

// formSamples turns every buffered device-used point that has an
// allocator-reserved partner within tol into a sample Record, in time order.
// Points that can no longer be joined are dropped and reported as
// unjoinable; the rest stay pending. Used points are sorted by time, so the
// samples come out in time order.
func (c *Converter) formSamples(s *series, emit func(*Record), skip func(Skip)) {
	tol := c.tolNs
	used := s.pts[roleDeviceUsed]
	kept := used[:0]
	for _, u := range used {
		reserved, ok := s.nearest(roleAllocatorReserved, u.tsNs, tol)
		if !ok {
			if s.hasReserved && s.maxReservedTs > u.tsNs+tol {
				c.stats.UnjoinedPoints++
				skip(Skip{Reason: SkipUnjoinable, Detail: "device-used point has no allocator-reserved point within sample_join_tolerance"})
				continue
			}
			kept = append(kept, u)
			continue
		}
		if detail := c.sample(&c.sampleRec, s, u, reserved); detail != "" {
			skip(Skip{Reason: SkipInvalidValue, Detail: detail})
			continue
		}
		emit(&c.sampleRec)
	}
	clear(used[len(kept):])
	s.pts[roleDeviceUsed] = kept
}

// newSampleRecord is a sample Record with the fields every sample shares
// (schema 2, collector, pid -1, allocator change 0); sample fills the rest.
func newSampleRecord() Record {
	return Record{Kind: KindSample, Event: telemetry.Event{
		SchemaVersion:        2,
		EventType:            "sample",
		Collector:            SampleCollector,
		PID:                  -1,
		AllocatorChangeBytes: telemetry.Int(0),
	}}
}

// sample writes into rec (made by newSampleRecord) the sample Record of one
// joined device-used point.
func (c *Converter) sample(rec *Record, s *series, u point, reserved int64) (detail string) {
	tol := c.tolNs
	free, hasFree := s.nearest(roleDeviceFree, u.tsNs, tol)
	total, hasTotal := s.nearest(roleDeviceTotal, u.tsNs, tol)
	if !hasTotal && hasFree {
		// DCGM reports used, free and the driver-reserved framebuffer but no
		// total by default: their sum is the framebuffer size.
		if devReserved, ok := s.nearest(roleDeviceReserved, u.tsNs, tol); ok {
			total, hasTotal = u.bytes+free+devReserved, true
		}
	}
	if hasTotal && (u.bytes > total || (hasFree && free > total)) {
		return "device used or free memory exceeds device total"
	}
	allocated, hasAllocated := s.nearest(roleAllocatorAllocated, u.tsNs, tol)
	if !hasAllocated {
		allocated = reserved // the reference's legacy loader does the same
	}
	active, hasActive := s.nearest(roleAllocatorActive, u.tsNs, tol)
	inactive, hasInactive := s.nearest(roleAllocatorInactive, u.tsNs, tol)
	host := s.host
	if host == "" {
		host = "unknown"
	}
	localRank := s.key.rank
	if s.hasLocal {
		localRank = s.localRank
	}
	// Only these fields vary: the constant ones were set once by
	// newSampleRecord and the others stay zero.
	rec.JobID, rec.Rank, rec.WorldSize, rec.Host, rec.TimestampNs = s.key.job, s.key.rank, s.worldSize, s.host, u.tsNs
	e := &rec.Event
	e.TimestampNs, e.Host, e.JobID, e.Rank, e.LocalRank, e.WorldSize, e.DeviceID = u.tsNs, host, s.key.job, s.key.rank, localRank, s.worldSize, s.deviceID
	e.AllocatorAllocatedBytes = telemetry.Int(allocated)
	e.AllocatorReservedBytes = telemetry.Int(reserved)
	e.AllocatorActiveBytes = opt(active, hasActive)
	e.AllocatorInactiveBytes = opt(inactive, hasInactive)
	e.DeviceUsedBytes = telemetry.Int(u.bytes)
	e.DeviceFreeBytes = opt(free, hasFree)
	e.DeviceTotalBytes = opt(total, hasTotal)
	return ""
}

// expire drops points that waited longer than the pending TTL; it returns
// how many device-used points left without forming a sample.
func (s *series) expire(cutoffNs int64) (unjoined int) {
	for r := range s.pts {
		buf := s.pts[r]
		kept := buf[:0]
		for _, p := range buf {
			if p.arrivalNs >= cutoffNs {
				kept = append(kept, p)
			} else if role(r) == roleDeviceUsed {
				unjoined++
			}
		}
		clear(buf[len(kept):])
		s.pts[r] = kept
	}
	return unjoined
}
