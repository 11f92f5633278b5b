package ingest

import (
	"math"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Converter turns OTLP metrics, spans and log records into Records. It keeps
// the state that conversion needs (as-of join buffers per (job, rank), the
// (host, device) → (job, rank) mapping) and nothing else. It is not safe for
// concurrent use: the processor core serialises calls. It never mutates its
// input and never panics on malformed input.
//
// Metrics, Traces and Logs return what they read as a sequence of Reads
// (records, runs, skips) in input order, each handed over by pointer: it
// is the Converter's and is reused for the next item, so the consumer
// copies what it keeps and modifies nothing. Internally each conversion
// hands its output to emit functions that the sequence turns into Reads.
type Converter struct {
	cfg Config
	now func() time.Time
	// worldSizesIgnored counts declared world sizes above cfg.MaxWorldSize
	// since TakeWorldSizesIgnored last read it.
	worldSizesIgnored int64
	keys              *keyIndex
	roles             map[string]namedRole
	// roleAt caches, per metric position within a scope, the configured
	// name last found there: a scope's metrics come in the same order every
	// batch, and one string compare costs less than hashing the name. The
	// names are the configuration's strings, so no request memory is pinned.
	roleAt [16]namedRole
	phase  phaseNames

	tolNs int64
	names *interner
	dev   *deviceMap

	series map[seriesKey]*series
	gen    uint64

	// Per-call scratch, reused to keep the hot path allocation-free.
	touched       []*series
	resID, itemID rawIdentity
	id            identity
	// idMemo remembers, per rank slot, the last identity resolved with a
	// rank. Resources repeat batch after batch (in-process exporters send
	// one per rank and collection): when an item resolves to the memo's
	// identity, interning its strings and learning its device mapping again
	// would change nothing but the mapping's last use, which is refreshed
	// once learnRefresh has passed.
	idMemo [256]idMemoEntry
	// resCache is the identity of the current resource alone, resolved (and
	// learned or joined) once per resource for the items that carry no
	// identity attributes of their own: the common in-process exporter case.
	resCache  identity
	resReason SkipReason
	resDetail string
	resCached bool
	// resAttrs are the current resource's attributes; resScanned says
	// resID holds their scan (done on first need).
	resAttrs   pcommon.Map
	resScanned bool
	// idGen changes whenever c.id is resolved anew; idIsRes says c.id holds
	// resCache. Items of one resource without identity attributes of their
	// own then reuse c.id as is, and the join buffer of the previous point
	// (lastSeries, updated with identity lastSeriesGen) needs no lookup.
	idGen         uint64
	idIsRes       bool
	lastSeriesGen uint64
	// lastSeries is the join buffer of the previous point: consecutive
	// points mostly belong to one rank.
	lastSeries *series
	// attrMemo is the outcome of the last point resolved from attributes of
	// its own, and resSeq numbers resources (an outcome holds only within
	// its resource, whose attributes the point's complete).
	attrMemo attrMemo
	resSeq   uint64

	// Traces: the batch's span index for the ancestor walk (built only when
	// needed, reset after each call), the walk's scratch (cleared after
	// each call), the shared phase paths and the scope ids' blocks.
	spanIdx     spanIndex
	tokens      tokenCache
	nameScratch []string
	pathScratch []string
	paths       phasePaths
	scopeIDs    scopeIDs

	// Logs: the body as JSON text, and the engine's decoder (which interns
	// short strings across calls).
	jsonBuf []byte
	dec     telemetry.Decoder
	// insp reads NCCL Inspector records and joins them by (host, pid).
	insp *inspectorState

	// rec is the Record handed to emit: emit reads it during the call and
	// copies what it keeps, so no Record is copied or allocated per item.
	// phaseRec is the one of phase spans: only its phase span fields are
	// ever set, so it needs no clearing between spans.
	rec      Record
	phaseRec Record
	// markerRun is the MarkerRun being built, its spans' times in
	// markerTimes.
	markerRun   MarkerRun
	markerTimes []int64
	// With Config.Evidence: the markers' ends and identities beside
	// markerTimes, the identities' member lists, and the identity
	// attributes of the span being scanned.
	markerEnds  []int64
	markerIDs   []evidence.Identity
	markerLists []memberList
	spanAttrs   markerAttrs
	// run is the SampleRun handed to convertMetrics' emit.
	run SampleRun

	stats Stats
	// orphaned counts partner points that Expire dropped (TakeOrphaned).
	orphaned int
}

// Stats are sizes and cumulative counts for self-telemetry.
type Stats struct {
	// Series is the number of (job, rank) join buffers.
	Series int
	// PendingPoints is the number of metric points waiting in join buffers.
	PendingPoints int
	// IdentityMappings is the number of live (host, device) mappings.
	IdentityMappings int
	// IdentityMapFull counts devices not learned because the mapping table
	// was at its bound (cumulative).
	IdentityMapFull uint64
	// UnjoinedPoints counts device-used points that never formed a sample
	// (cumulative; each was also reported as an unjoinable Skip, or by the
	// return value of Expire).
	UnjoinedPoints uint64
}

// NewConverter returns a Converter; now is the wall clock (injectable for
// tests), used for the identity TTL, the pending TTL and the future-timestamp
// check.
func NewConverter(cfg Config, now func() time.Time) *Converter {
	cfg = cfg.withDefaults()
	if now == nil {
		now = time.Now
	}
	var phaseSpanNames []string
	if !cfg.NoPhaseSpans {
		phaseSpanNames = cfg.PhaseSpanNames
	}
	c := &Converter{
		cfg:    cfg,
		now:    now,
		keys:   newKeyIndex(cfg.Identity),
		roles:  map[string]namedRole{},
		phase:  newPhaseNames(phaseSpanNames),
		tolNs:  int64(cfg.SampleJoinTolerance),
		names:  newInterner(4 * cfg.MaxSeries),
		dev:    newDeviceMap(int64(cfg.IdentityTTL), cfg.MaxIdentityMappings),
		series: map[seriesKey]*series{},
	}
	c.insp = newInspectorState(cfg.Inspector, cfg.IdentityTTL, cfg.MaxIdentityMappings, now)
	addRoles := func(r role, names []string) {
		for _, n := range names {
			if _, dup := c.roles[n]; !dup {
				c.roles[n] = namedRole{name: n, role: r}
			}
		}
	}
	m := cfg.Metrics
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
func (c *Converter) roleOf(k int, name string) (role, bool) {
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

// Expire drops identity mappings unused for IdentityTTL and join-buffer
// points older (wall clock) than PendingTTL, and forgets empty join buffers.
// Call it on each tick. It returns how many device-used points were dropped
// without forming a sample: the caller counts them as unjoinable.
func (c *Converter) Expire() (unjoined int) {
	nowNs := c.now().UnixNano()
	c.dev.expire(nowNs)
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

// Stats returns the current sizes and cumulative counts.
func (c *Converter) Stats() Stats {
	st := c.stats
	st.Series = len(c.series)
	for _, s := range c.series {
		st.PendingPoints += s.pendingPoints()
	}
	st.IdentityMappings = len(c.dev.m)
	st.IdentityMapFull = c.dev.full
	return st
}

// beginResource scans a resource's identity attributes for the items that
// follow.
func (c *Converter) beginResource(attrs pcommon.Map) {
	c.startResource(attrs)
	c.scanResource()
}

// startResource makes attrs the current resource's, not yet scanned.
func (c *Converter) startResource(attrs pcommon.Map) {
	c.resAttrs, c.resScanned = attrs, false
	c.resCached, c.idIsRes = false, false
	c.resSeq++
}

// dropRequest lets go of the call's input, which the per-call identity
// state still refers to: a pcommon value keeps the whole resource it
// belongs to (every metric, span or record of it) reachable until the
// next call.
func (c *Converter) dropRequest() {
	c.attrMemo.forget()
	c.resAttrs = pcommon.Map{}
	c.resID.drop()
	c.itemID.drop()
}

// scanResource scans the current resource's identity attributes into resID
// unless done.
func (c *Converter) scanResource() {
	if !c.resScanned {
		c.resID.reset()
		c.resID.scan(c.keys, c.resAttrs)
		c.resScanned = true
	}
}

// identifyItem resolves the identity of an item with attributes attrs of the
// current resource into c.id (see identify).
func (c *Converter) identifyItem(attrs pcommon.Map, nowNs int64) (SkipReason, string) {
	if attrs.Len() == 0 {
		return c.identifyByResource(nowNs)
	}
	m := &c.attrMemo
	if m.holds(c, attrs, nowNs) {
		if m.idGen != c.idGen {
			c.id = m.id
			c.idGen++
			c.idIsRes = false
			m.idGen = c.idGen
		}
		return m.reason, m.detail
	}
	c.itemID.reset()
	c.itemID.scan(c.keys, attrs)
	reason, detail := c.identifyScanned(nowNs)
	m.remember(c, attrs, nowNs, reason, detail)
	return reason, detail
}

// identifyScanned is identifyItem for an item whose attributes were already
// scanned into c.itemID.
func (c *Converter) identifyScanned(nowNs int64) (SkipReason, string) {
	if c.itemID.any() {
		return c.identify(nowNs)
	}
	return c.identifyByResource(nowNs)
}

// identifyByResource identifies an item without identity attributes of its
// own by its resource, resolving the resource once.
func (c *Converter) identifyByResource(nowNs int64) (SkipReason, string) {
	switch {
	case !c.resCached:
		c.itemID.reset()
		c.resReason, c.resDetail = c.identify(nowNs)
		c.resCache, c.resCached = c.id, true
		c.idIsRes = true
	case !c.idIsRes:
		c.id = c.resCache
		c.idGen++
		c.idIsRes = true
	}
	return c.resReason, c.resDetail
}

// identify resolves the current item's identity (c.itemID over c.resID)
// into c.id, learning or joining the device mapping. It returns a Skip
// reason when the item cannot be attributed to a rank.
func (c *Converter) identify(nowNs int64) (SkipReason, string) {
	c.scanResource()
	c.idGen++
	c.idIsRes = false
	id := &c.id
	if detail := resolve(&c.itemID, &c.resID, id); detail != "" {
		return SkipInvalidValue, detail
	}
	if detail := c.identityTooLong(id.job, id.host, id.devOpaque); detail != "" {
		return SkipInvalidValue, detail
	}
	id.worldSize = c.believedWorldSize(id.worldSize)
	if id.hasRank {
		m := &c.idMemo[uint64(id.rank)%uint64(len(c.idMemo))]
		if m.valid && m.id == *id && nowNs-m.learnedNs < int64(learnRefresh) {
			*id = m.id // the same identity, its strings interned
			return "", ""
		}
		// A memoised identity was admitted; the store still checks it.
		if !c.admits(id.job) {
			return overJobLimit.Reason, overJobLimit.Detail
		}
		id.job = c.names.intern(id.job)
		id.host = c.names.intern(id.host)
		id.devOpaque = c.names.intern(id.devOpaque)
		c.dev.learn(c.names, id, nowNs)
		*m = idMemoEntry{id: *id, learnedNs: nowNs, valid: true}
		return "", ""
	}
	if !id.hasDevice() || id.host == "" {
		return SkipNoIdentity, "no rank and no host and device to join on"
	}
	if reason, detail := c.dev.join(id, nowNs); reason != "" {
		return reason, detail
	}
	id.host = c.names.intern(id.host)
	return "", ""
}

// learnRefresh is how often a repeated identity refreshes its device
// mapping's last use; far below any sensible identity_ttl.
const learnRefresh = time.Second

// idMemoEntry is a resolved identity with interned strings.
type idMemoEntry struct {
	id        identity
	learnedNs int64
	valid     bool
}

// futureSkip is the skip of an item past futureLimit.
var futureSkip = Skip{Reason: SkipFuture, Detail: "timestamp is more than max_future_skew ahead of the collector's clock"}

// futureLimit is the newest acceptable item timestamp.
func (c *Converter) futureLimit(nowNs int64) int64 { return nowNs + int64(c.cfg.MaxFutureSkew) }

// attrMemo remembers the identity outcome of the last point resolved from
// attributes of its own. Device-level points come in runs of one GPU (DCGM
// lists each GPU's points of a metric together, with the same labels):
// comparing a point's attributes with the previous point's costs a fraction
// of scanning, resolving and joining them again. The outcome is a function
// of the attributes, the resource, the device mapping and the clock, so it
// holds while all four are unchanged. Its attribute values point into the
// call's input: forget drops them at the end of the call.
type attrMemo struct {
	valid      bool
	resSeq     uint64
	devVersion uint64
	nowNs      int64
	attrs      []memoAttr
	id         identity
	// idGen is c.idGen when c.id last held id.
	idGen  uint64
	reason SkipReason
	detail string
}

type memoAttr struct {
	key string
	val pcommon.Value
}

func (m *attrMemo) holds(c *Converter, attrs pcommon.Map, nowNs int64) bool {
	if !m.valid || m.resSeq != c.resSeq || m.devVersion != c.dev.version || m.nowNs != nowNs || len(m.attrs) != attrs.Len() {
		return false
	}
	i := 0
	for k, v := range attrs.All() {
		if a := &m.attrs[i]; a.key != k || !sameScalar(a.val, v) {
			return false
		}
		i++
	}
	return true
}

func (m *attrMemo) remember(c *Converter, attrs pcommon.Map, nowNs int64, reason SkipReason, detail string) {
	m.attrs = m.attrs[:0]
	for k, v := range attrs.All() {
		m.attrs = append(m.attrs, memoAttr{key: k, val: v})
	}
	m.valid, m.resSeq, m.devVersion, m.nowNs = true, c.resSeq, c.dev.version, nowNs
	m.id, m.idGen, m.reason, m.detail = c.id, c.idGen, reason, detail
}

func (m *attrMemo) forget() {
	clear(m.attrs)
	m.attrs = m.attrs[:0]
	m.valid = false
}

// sameScalar reports whether two attribute values are the same string,
// int, double (bit for bit) or bool. Other types never compare equal, so
// their points are resolved each time.
func sameScalar(a, b pcommon.Value) bool {
	if a.Type() != b.Type() {
		return false
	}
	switch a.Type() {
	case pcommon.ValueTypeStr:
		return a.Str() == b.Str()
	case pcommon.ValueTypeInt:
		return a.Int() == b.Int()
	case pcommon.ValueTypeDouble:
		return math.Float64bits(a.Double()) == math.Float64bits(b.Double())
	case pcommon.ValueTypeBool:
		return a.Bool() == b.Bool()
	default:
		return false
	}
}
