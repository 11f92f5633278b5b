package ingest

import (
	"math"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// maxBytes bounds a plausible byte count (8 PiB, the float64 integer range):
// anything larger is a unit or encoding error.
const maxBytes = 1 << 53

const mib = 1 << 20

// metricsConverter forms samples from memory metrics: it keeps the as-of
// join buffers per (job, rank) and, when the mode reads it
// (EngineReads.Accounting), reads NCCL's accounting gauge.
type metricsConverter struct {
	cfg   *Config
	now   func() time.Time
	ids   *identityResolver
	roles map[string]namedRole
	// roleAt caches, per metric position within a scope, the configured
	// name last found there: a scope's metrics come in the same order every
	// batch, and one string compare costs less than hashing the name. The
	// names are the configuration's strings, so no request memory is pinned.
	roleAt [16]namedRole
	tolNs  int64

	series map[seriesKey]*series
	gen    uint64
	// addNow says the call's points go into their series' rows as they are
	// read, in one pass. It is false for a batch holding per-process points
	// (roleProcessUsed): a rank's first such point decides, before any of
	// the batch's points is buffered, how its device-used points are, so
	// that batch's points wait in series.batch for the end of the call.
	// Points held aside (directjoin.go) need neither, so it is found out
	// only once a resource is not held aside (addNowKnown).
	addNow      bool
	addNowKnown bool
	// processRoles says some metric name feeds roleProcessUsed.
	processRoles bool
	// touched are the join buffers the current call added to.
	touched []*series
	// lastSeries is the join buffer of the previous point: consecutive
	// points mostly belong to one rank. It holds for the identity the
	// resolver numbered lastSeriesGen.
	lastSeries    *series
	lastSeriesGen uint64
	// rec is the accounting Record handed to emit, and run the SampleRun:
	// emit reads them during the call and copies what it keeps.
	rec Record
	run SampleRun

	// directs are the call's resources whose points are held aside to
	// form their samples without the join rows, with their samples'
	// times and values by role (directjoin.go); joinOnly turns that way
	// off, so that tests can compare it with the join.
	directs    []directBatch
	directTs   []int64
	directVals [][numRoles]int64
	joinOnly   bool

	stats Stats
	// orphaned counts partner points that expire dropped (takeOrphaned).
	orphaned int
}

func newMetricsConverter(cfg *Config, ids *identityResolver, now func() time.Time) *metricsConverter {
	c := &metricsConverter{
		cfg:    cfg,
		now:    now,
		ids:    ids,
		roles:  map[string]namedRole{},
		tolNs:  int64(cfg.SampleJoinTolerance),
		series: map[seriesKey]*series{},
	}
	addRoles := func(r role, names []string) {
		for _, n := range names {
			if _, dup := c.roles[n]; !dup {
				c.roles[n] = namedRole{name: n, role: r}
			}
		}
	}
	m := cfg.Metrics
	c.processRoles = len(m.ProcessUsed) > 0
	addRoles(roleDeviceUsed, m.DeviceUsed)
	addRoles(roleDeviceFree, m.DeviceFree)
	addRoles(roleDeviceTotal, m.DeviceTotal)
	addRoles(roleAllocatorReserved, m.AllocatorReserved)
	addRoles(roleAllocatorAllocated, m.AllocatorAllocated)
	addRoles(roleAllocatorActive, m.AllocatorActive)
	addRoles(roleAllocatorInactive, m.AllocatorInactive)
	addRoles(roleDeviceReserved, m.DeviceReserved)
	addRoles(roleProcessUsed, m.ProcessUsed)
	return c
}

// namedRole is a configured metric name and the role it feeds.
type namedRole struct {
	name string
	role role
}

// roleOf returns the role of the k-th metric of a scope, named name.
func (c *metricsConverter) roleOf(k int, name string) (role, bool) {
	if k < len(c.roleAt) {
		if h := &c.roleAt[k]; h.name == name && h.name != "" {
			return h.role, true
		}
	}
	nr, ok := c.roles[name]
	if ok && k < len(c.roleAt) {
		c.roleAt[k] = nr
	}
	return nr.role, ok
}

// expire drops join-buffer points older (wall clock) than PendingTTL and
// forgets empty join buffers. It returns how many device-used points were
// dropped without forming a sample.
func (c *metricsConverter) expire(nowNs int64) (unjoined int) {
	cutoff := nowNs - int64(c.cfg.PendingTTL)
	for k, s := range c.series {
		unjoined += s.expire(cutoff)
		c.orphaned += s.dropped.takeOrphaned()
		if s.empty() {
			delete(c.series, k)
			if c.lastSeries == s {
				c.lastSeries = nil
			}
		}
	}
	c.stats.UnjoinedPoints += uint64(unjoined)
	return unjoined
}

// isMiB reports whether a memory metric is in MiB rather than bytes: DCGM
// exporter metrics (always MiB) and metrics that say so in their unit.
func isMiB(m pmetric.Metric) bool {
	if strings.HasPrefix(m.Name(), "DCGM_") {
		return true
	}
	u := m.Unit()
	return u == "MiB" || u == "MiBy"
}

// convertMetrics forms samples (contract §3.1) from the memory metrics in md.
// Points of the configured names are buffered per (job, rank) and role; at
// the end of the call every device-used point that has an allocator-reserved
// point within SampleJoinTolerance (from this or an earlier call) becomes a
// sample, handed to emit in one SampleRun per (job, rank). Other metrics are
// ignored without a Skip.
func (c *metricsConverter) convertMetrics(md pmetric.Metrics, emit func(*SampleRun), skip func(Skip)) {
	c.convertMetricsAccounting(md, emit, nil, skip)
}

// convertMetricsAccounting is convertMetrics that, with Config.Reads.Accounting
// and emitAccounting set, also hands each point of NCCL's accounting gauge
// to emitAccounting as a KindAccounting Record (accounting.go).
func (c *metricsConverter) convertMetricsAccounting(md pmetric.Metrics, emit func(*SampleRun), emitAccounting func(*Record), skip func(Skip)) {
	accounting := c.cfg.Reads.Accounting && emitAccounting != nil
	nowNs := c.now().UnixNano()
	c.gen++
	c.touched = c.touched[:0]
	limit := c.cfg.futureLimit(nowNs)
	c.addNowKnown = false
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		rm := rms.At(i)
		resStarted := false
		var resSeries seriesOf // see convertPoints
		if !c.joinOnly {
			var held bool
			if held, resStarted, resSeries = c.readDirect(rm, i, nowNs, limit, accounting); held {
				continue
			}
		}
		if !c.addNowKnown {
			c.addNow, c.addNowKnown = !c.holdsProcessPoints(md), true
		}
		sms := rm.ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				r, dps, kind := c.memoryMetric(k, m)
				switch kind {
				case notMemory:
					if accounting && m.Name() == AccountingMetric {
						resStarted = c.convertAccounting(rm, i, m, resStarted, nowNs, limit, emitAccounting, skip)
					}
					continue
				case deltaSum:
					for range dps.Len() {
						skip(Skip{Reason: SkipInvalidValue, Detail: "memory metric is a delta sum, not a level"})
					}
					continue
				case notNumbers:
					for range dataPointCount(m) {
						skip(Skip{Reason: SkipInvalidValue, Detail: "memory metric is not a gauge or sum"})
					}
					continue
				}
				if !resStarted {
					c.ids.startResource(rm.Resource().Attributes(), &c.ids.metricsRes, i)
					resStarted = true
				}
				unit := unitBytes
				if isMiB(m) {
					unit = unitMiB
				}
				resSeries = c.convertPoints(dps, r, unit, nowNs, limit, resSeries, skip)
			}
		}
	}
	for _, s := range c.touched {
		if s.direct != 0 {
			c.formDirect(s, nowNs, emit, skip)
		} else {
			c.joinBatch(s, nowNs, emit, skip)
		}
	}
	c.endDirects()
	clear(c.touched)
	c.touched = c.touched[:0]
	c.ids.dropRequest()
}

// holdsProcessPoints reports whether md holds a metric of a per-process
// role: a look at metric names, not points.
func (c *metricsConverter) holdsProcessPoints(md pmetric.Metrics) bool {
	if !c.processRoles {
		return false
	}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				if r, ok := c.roleOf(k, ms.At(k).Name()); ok && r == roleProcessUsed {
					return true
				}
			}
		}
	}
	return false
}

// metricKind is what a metric is to Converter.Metrics.
type metricKind uint8

const (
	notMemory  metricKind = iota // not a configured memory metric: ignored
	levels                       // a gauge or cumulative sum: its points are levels
	deltaSum                     // a delta sum: its points are invalid
	notNumbers                   // a histogram, summary...: its points are invalid
)

// memoryMetric tells what the k-th metric m of a scope is, and for a
// memory metric its role, and its points unless it is notNumbers.
func (c *metricsConverter) memoryMetric(k int, m pmetric.Metric) (role, pmetric.NumberDataPointSlice, metricKind) {
	r, ok := c.roleOf(k, m.Name())
	if !ok {
		return r, pmetric.NumberDataPointSlice{}, notMemory
	}
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return r, m.Gauge().DataPoints(), levels
	case pmetric.MetricTypeSum:
		if m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityDelta {
			return r, m.Sum().DataPoints(), deltaSum
		}
		return r, m.Sum().DataPoints(), levels
	default:
		return r, pmetric.NumberDataPointSlice{}, notNumbers
	}
}

func dataPointCount(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeHistogram:
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().DataPoints().Len()
	case pmetric.MetricTypeSummary:
		return m.Summary().DataPoints().Len()
	default:
		return 0
	}
}

// convertPoints buffers the valid points of one metric of role r. resSeries
// is the join buffer of the resource's own identity when a point without
// attributes of its own has found it (nil before); the resource's next such
// points go to it without resolving the identity again. It returns
// resSeries, found or not.
func (c *metricsConverter) convertPoints(dps pmetric.NumberDataPointSlice, r role, unit valueUnit, nowNs, limit int64, resSeries seriesOf, skip func(Skip)) seriesOf {
	for l := 0; l < dps.Len(); l++ {
		dp := dps.At(l)
		if dp.Flags().NoRecordedValue() {
			continue // a staleness marker carries no value
		}
		// Integer byte counts in range, the common case, without a call.
		bytes := dp.IntValue()
		if dp.ValueType() != pmetric.NumberDataPointValueTypeInt || uint64(bytes) > uint64(unit.maxInt) {
			var detail string
			if bytes, detail = pointBytes(dp, unit); detail != "" {
				skip(Skip{Reason: SkipInvalidValue, Detail: detail})
				continue
			}
		} else {
			bytes *= unit.scale
		}
		ts, refused, ok := pointTime(dp, limit)
		if !ok {
			skip(refused)
			continue
		}
		s, session := resSeries.s, resSeries.session
		if r == roleProcessUsed {
			// Resolved each time: whether it names its rank decides.
			s = nil
		}
		if attrs := dp.Attributes(); s == nil || attrs.Len() > 0 {
			if s = c.itemSeries(attrs, nowNs, skip); s == nil {
				continue
			}
			if r == roleProcessUsed && c.ids.id.viaDevice {
				skip(Skip{Reason: SkipUnjoinable, Detail: "per-process GPU memory point names no rank: it may be any process's on that GPU"})
				continue
			}
			session = c.pointSession(s)
			if attrs.Len() == 0 && r != roleProcessUsed {
				resSeries = seriesOf{s, session}
			}
		}
		if s.direct != 0 {
			c.spill(s, nowNs)
		}
		if s.late(r, ts) {
			c.refuseLate(skip)
			continue
		}
		if c.addNow {
			s.shedUsed += s.add(s.bufferedRole(r), ts, bytes, nowNs, session, c.cfg.MaxPendingRows)
		} else {
			s.batch = append(s.batch, batchPoint{tsNs: ts, bytes: bytes, role: r, session: session})
		}
		c.touch(s)
	}
	return resSeries
}

// seriesOf is the join buffer of an identity and the index of its process
// in the buffer's session table (series.sessionIndex).
type seriesOf struct {
	s       *series
	session uint8
}

// pointSession is the index in s's session table of the process of the
// identity just resolved for s: 0 when it names none. A series' points
// mostly come from one process: its index is kept (series.lastProcess).
func (c *metricsConverter) pointSession(s *series) uint8 {
	id := &c.ids.id
	if id.pid < 0 {
		return 0
	}
	k := processKey{host: id.host, pid: id.pid, start: id.procStart}
	if p := &s.lastProcess; p.valid && p.key == k {
		return p.index
	}
	i := s.sessionIndex(c.ids.session())
	s.lastProcess = processIndex{key: k, index: i, valid: true}
	return i
}

// itemSeries resolves the identity of a point with attributes attrs of the
// current resource and returns its (job, rank) join buffer; nil when the
// point is skipped.
func (c *metricsConverter) itemSeries(attrs pcommon.Map, nowNs int64, skip func(Skip)) *series {
	s, refused := c.resolveSeries(attrs, nowNs)
	if s == nil {
		skip(refused)
	}
	return s
}

// resolveSeries is itemSeries that returns the skip rather than hand it
// over.
func (c *metricsConverter) resolveSeries(attrs pcommon.Map, nowNs int64) (*series, Skip) {
	if reason, detail := c.ids.identifyItem(attrs, nowNs); reason != "" {
		return nil, Skip{Reason: reason, Detail: detail}
	}
	s := c.lastSeries
	if s == nil || c.lastSeriesGen != c.ids.idGen {
		id := &c.ids.id
		key := seriesKey{job: id.job, rank: id.rank}
		if s == nil || s.key != key {
			if s = c.seriesFor(key); s == nil {
				return nil, Skip{Reason: SkipOverLimit, Detail: "too many (job, rank) join buffers"}
			}
			c.lastSeries = s
		}
		s.updateIdentity(id)
		c.lastSeriesGen = c.ids.idGen
	}
	return s, Skip{}
}

// refuseLate reports a device-used point before its series' horizon.
func (c *metricsConverter) refuseLate(skip func(Skip)) {
	c.stats.UnjoinedPoints++
	skip(Skip{Reason: SkipUnjoinable, Detail: "device-used point is older than its rank's newest of an earlier batch by more than sample_join_tolerance (resent or out of order)"})
}

// touch marks s as having new points in this call, so that it joins them
// at the end of the call.
func (c *metricsConverter) touch(s *series) {
	if s.touchedGen != c.gen {
		s.touchedGen = c.gen
		c.touched = append(c.touched, s)
	}
}

// shed reports the n device-used points a join buffer shed unjoined.
func (c *metricsConverter) shed(n int, skip func(Skip)) {
	if n == 0 {
		return
	}
	c.stats.UnjoinedPoints += uint64(n)
	for range n {
		skip(Skip{Reason: SkipUnjoinable, Detail: "device-used point pushed out of the join buffer before an allocator-reserved point arrived"})
	}
}

// seriesFor returns the join buffer of key, creating it within MaxSeries
// (nil past it).
func (c *metricsConverter) seriesFor(key seriesKey) *series {
	s, ok := c.series[key]
	if !ok {
		if len(c.series) >= c.cfg.MaxSeries {
			return nil
		}
		key.job = c.ids.names.intern(key.job)
		s = &series{key: key, deviceID: -1}
		c.series[key] = s
	}
	return s
}

// valueUnit is the unit of a memory metric's values: its byte multiplier
// and the largest integer value that stays within maxBytes, worked out once
// per metric rather than divided per point.
type valueUnit struct {
	scale, maxInt int64
}

var (
	unitBytes = valueUnit{scale: 1, maxInt: maxBytes}
	unitMiB   = valueUnit{scale: mib, maxInt: maxBytes / mib}
)

// pointBytes reads a data point as a byte count.
func pointBytes(dp pmetric.NumberDataPoint, unit valueUnit) (int64, string) {
	scale := unit.scale
	switch dp.ValueType() {
	case pmetric.NumberDataPointValueTypeInt:
		v := dp.IntValue()
		if v < 0 {
			return 0, "negative memory value"
		}
		if v > unit.maxInt {
			return 0, "memory value too large"
		}
		return v * scale, ""
	case pmetric.NumberDataPointValueTypeDouble:
		v := dp.DoubleValue()
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, "memory value is NaN or infinite"
		}
		if v < 0 {
			return 0, "negative memory value"
		}
		v = math.Round(v * float64(scale))
		if v > maxBytes {
			return 0, "memory value too large"
		}
		return int64(v), ""
	default:
		return 0, "data point has no value"
	}
}

// pointTime is a data point's timestamp, or the skip that refuses the
// point: no timestamp, or one past limit (max_future_skew ahead).
func pointTime(dp pmetric.NumberDataPoint, limit int64) (int64, Skip, bool) {
	ts := int64(dp.Timestamp())
	if ts <= 0 {
		return 0, Skip{Reason: SkipInvalidValue, Detail: "data point timestamp is missing"}, false
	}
	if ts > limit {
		return 0, futureSkip, false
	}
	return ts, Skip{}, true
}
