package ingest

import (
	"math"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/collectiveattr/collectiveattr/inspector"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// identityResolver resolves the (job, rank, host, device) of the items of
// every signal: it scans identity attributes (item over resource), checks
// the identity limits, interns the strings and learns or joins the device
// mapping. Its memo caches (idMemo, resCache, attrMemo, and the resource
// readings of metricsRes and tracesRes) exist because one batch mostly
// repeats a few identities, and one batch the resources of the last. The per-signal converters share
// one resolver, so a device claimed by a rank's metrics joins its DCGM
// points and a stormlog record's device claim counts for the metrics.
//
// After an identify call, id holds the item's identity (strings interned
// unless the call returned a skip); idGen changes whenever id is resolved
// anew, so a caller may key its own per-identity cache (the metrics join
// buffer of the previous point) on idGen.
type identityResolver struct {
	maxIdentityBytes int
	maxWorldSize     int64
	admitsJob        func(job string) bool
	// worldSizesIgnored counts declared world sizes above maxWorldSize
	// since takeWorldSizesIgnored last read it.
	worldSizesIgnored int64

	keys  *keyIndex
	names *interner
	dev   *deviceMap

	// Per-call scratch, reused to keep the hot path allocation-free.
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
	// res is the current resource's reading (nil until needed), read
	// through resMemo at position resIndex of the call when resMemo is
	// set; resRead holds a reading the memo does not.
	res      *resourceReading
	resMemo  *resourceMemo
	resIndex int
	resRead  resourceReading
	// metricsRes and tracesRes memoise the readings of the resources of
	// the previous metrics and traces batch.
	metricsRes, tracesRes resourceMemo
	// procHostKeys and procPIDKeys are the Inspector's process keys
	// (InspectorConfig.HostKeys, PIDKeys).
	procHostKeys, procPIDKeys []string
	// idIsRes says id holds resCache: items of one resource without
	// identity attributes of their own then reuse id as is.
	idGen   uint64
	idIsRes bool
	// attrMemo is the outcome of the last point resolved from attributes of
	// its own, and resSeq numbers resources (an outcome holds only within
	// its resource, whose attributes the point's complete).
	attrMemo attrMemo
	resSeq   uint64
	// sess is the session last built (session).
	sess sessionMemo
}

func newIdentityResolver(cfg *Config) *identityResolver {
	return &identityResolver{
		maxIdentityBytes: cfg.MaxIdentityBytes,
		maxWorldSize:     cfg.MaxWorldSize,
		admitsJob:        cfg.AdmitsJob,
		keys:             newKeyIndex(cfg.Identity),
		names:            newInterner(4 * cfg.MaxSeries),
		dev:              newDeviceMap(int64(cfg.IdentityTTL), cfg.MaxIdentityMappings),
		procHostKeys:     cfg.Inspector.HostKeys,
		procPIDKeys:      cfg.Inspector.PIDKeys,
	}
}

// beginResource scans a resource's identity attributes for the items that
// follow.
func (c *identityResolver) beginResource(attrs pcommon.Map) {
	c.startResource(attrs, nil, 0)
	c.scanResource()
}

// startResource makes attrs the current resource's, not yet scanned nor
// read; memo (nil: none) memoises its reading as the resource at position
// i of its batch.
func (c *identityResolver) startResource(attrs pcommon.Map, memo *resourceMemo, i int) {
	c.resAttrs, c.resScanned = attrs, false
	c.res, c.resMemo, c.resIndex = nil, memo, i
	c.resCached, c.idIsRes = false, false
	c.resSeq++
}

// resource returns the current resource's reading.
func (c *identityResolver) resource() *resourceReading {
	if c.res == nil {
		c.res = c.readResource(c.resMemo, c.resIndex, c.resAttrs)
	}
	return c.res
}

// readResource returns the reading of a resource with attributes attrs,
// through memo (nil: none) as the resource at position i of its batch.
// What it returns is valid until the next call.
func (c *identityResolver) readResource(memo *resourceMemo, i int, attrs pcommon.Map) *resourceReading {
	if memo != nil {
		if rd := memo.lookup(i, attrs); rd != nil {
			return rd
		}
	}
	rd := &c.resRead
	rd.learned = inspector.Learned{}
	var raw, none rawIdentity
	raw.scan(c.keys, attrs)
	rd.detail = resolve(&none, &raw, &rd.id)
	rd.procHost, rd.procPID, rd.procOK = c.resourceProcess(attrs)
	// Only identities within the limits, of a job the store has room for,
	// are interned and memoised: a flood of huge or new ones must cost
	// nothing beyond the request that carried them.
	if memo == nil || c.identityTooLong(rd.id.job, rd.id.host, rd.id.devOpaque, rd.id.procStart, rd.procHost) != "" || !c.admits(rd.id.job) {
		return rd
	}
	id := &rd.id
	id.job, id.host = c.names.intern(id.job), c.names.intern(id.host)
	id.devOpaque, id.procStart = c.names.intern(id.devOpaque), c.names.intern(id.procStart)
	rd.procHost = c.names.intern(rd.procHost)
	if memo.store(i, attrs, rd) {
		return &memo.entries[i].reading
	}
	return rd
}

// resourceProcess is the process a resource names by the Inspector's keys:
// the first pid key present decides the pid (a valid one, or none), the
// first host key with a string value the host.
func (c *identityResolver) resourceProcess(attrs pcommon.Map) (host string, pid int64, ok bool) {
	for _, k := range c.procPIDKeys {
		if v, found := attrs.Get(k); found {
			pid, ok = intValue(v)
			break
		}
	}
	if !ok || pid < 0 {
		return "", -1, false
	}
	for _, k := range c.procHostKeys {
		if v, found := attrs.Get(k); found && v.Type() == pcommon.ValueTypeStr {
			host = v.Str()
			break
		}
	}
	if host == "" {
		return "", -1, false
	}
	return host, pid, true
}

// dropRequest lets go of the call's input, which the per-call identity
// state still refers to: a pcommon value keeps the whole resource it
// belongs to (every metric, span or record of it) reachable until the
// next call.
func (c *identityResolver) dropRequest() {
	c.attrMemo.forget()
	c.resAttrs = pcommon.Map{}
	c.res, c.resMemo, c.resRead = nil, nil, resourceReading{}
	c.metricsRes.drop()
	c.tracesRes.drop()
	c.resID.drop()
	c.itemID.drop()
}

// scanResource scans the current resource's identity attributes into resID
// unless done.
func (c *identityResolver) scanResource() {
	if !c.resScanned {
		c.resID.reset()
		c.resID.scan(c.keys, c.resAttrs)
		c.resScanned = true
	}
}

// identifyItem resolves the identity of an item with attributes attrs of the
// current resource into c.id (see identify).
func (c *identityResolver) identifyItem(attrs pcommon.Map, nowNs int64) (SkipReason, string) {
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
func (c *identityResolver) identifyScanned(nowNs int64) (SkipReason, string) {
	if c.itemID.any() {
		return c.identify(nowNs)
	}
	return c.identifyByResource(nowNs)
}

// identifyByResource identifies an item without identity attributes of its
// own by its resource, resolving the resource once.
func (c *identityResolver) identifyByResource(nowNs int64) (SkipReason, string) {
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
func (c *identityResolver) identify(nowNs int64) (SkipReason, string) {
	c.idGen++
	c.idIsRes = false
	id := &c.id
	if c.itemID.any() {
		c.scanResource()
		if detail := resolve(&c.itemID, &c.resID, id); detail != "" {
			return SkipInvalidValue, detail
		}
	} else if rd := c.resource(); rd.detail != "" {
		*id = rd.id
		return SkipInvalidValue, rd.detail
	} else {
		*id = rd.id
	}
	if detail := c.identityTooLong(id.job, id.host, id.devOpaque, id.procStart); detail != "" {
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
		id.procStart = c.names.intern(id.procStart)
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
	// A device-level point's process is its exporter's (DCGM, a node
	// agent), never the rank's.
	id.pid, id.procStart = -1, ""
	return "", ""
}

// session is the session of the current identity's items
// (docs/evidence-mode.md §7.1): its process, named by host, pid and start
// time when the item names its pid, else the job id, as for a process
// that names none. Spans and gauges of one resource get one session, so
// that a restarted process's samples and phase spans are a new session of
// the rank together.
func (c *identityResolver) session() string {
	id := &c.id
	if id.pid < 0 {
		return id.job
	}
	if c.sess.gen == c.idGen && c.sess.valid {
		return c.sess.id
	}
	k := processKey{host: id.host, pid: id.pid, start: id.procStart}
	if !c.sess.valid || c.sess.key != k {
		b := append(c.sess.buf[:0], k.host...)
		b = append(b, '/')
		b = strconv.AppendInt(b, k.pid, 10)
		if k.start != "" {
			b = append(b, '@')
			b = append(b, k.start...)
		}
		c.sess.id, c.sess.key, c.sess.buf = c.names.internBytes(b), k, b
	}
	c.sess.gen, c.sess.valid = c.idGen, true
	return c.sess.id
}

// processKey is a process as the items name it.
type processKey struct {
	host  string
	pid   int64
	start string
}

// sessionMemo is the session last built, and the identity (idGen) it is of.
type sessionMemo struct {
	key   processKey
	id    string
	gen   uint64
	valid bool
	// buf is the scratch the session is built in.
	buf []byte
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

func (m *attrMemo) holds(c *identityResolver, attrs pcommon.Map, nowNs int64) bool {
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

func (m *attrMemo) remember(c *identityResolver, attrs pcommon.Map, nowNs int64, reason SkipReason, detail string) {
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

// identifyStormlog makes id the identity a stormlog record states (its
// job as the caller resolved it, its rank, local rank, world size, host
// and device) and learns its device mapping as a ranked item's: a
// stormlog rank and a metrics rank on one device are one claimant. The
// caller has checked the identity limits.
func (c *identityResolver) identifyStormlog(ev *telemetry.Event, job, host string, nowNs int64) {
	c.idGen++
	c.idIsRes = false
	c.id = identity{
		job: c.names.intern(job), hasJob: true,
		rank: ev.Rank, hasRank: true,
		localRank: ev.LocalRank, hasLocal: true,
		worldSize:   ev.WorldSize,
		host:        c.names.intern(host),
		devIndex:    -1,
		migInstance: -1,
		pid:         -1,
	}
	if ev.DeviceID >= 0 {
		c.id.devIndex = ev.DeviceID
	}
	c.dev.learn(c.names, &c.id, nowNs)
}
