package ingest

import (
	"errors"
	"iter"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/inspector"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

// InspectorConfig configures the reading of NCCL Inspector records
// (docs/nccl-inspector.md) from log bodies and their (host, pid) join.
type InspectorConfig struct {
	// HostKeys are the resource (or item) attribute keys whose value is the
	// host name the plugin writes (gethostname() of the training process:
	// in Kubernetes the pod's hostname, not the node's); the first present
	// wins. Default: host.name, k8s.pod.name.
	HostKeys []string
	// PIDKeys are the attribute keys of the training process's pid.
	// Default: process.pid.
	PIDKeys []string
	// Hold is how long (wall clock) a record whose (host, pid) no rank's
	// telemetry names yet waits for it (default 30s).
	Hold time.Duration
	// MaxPending bounds the records waiting (default 65536); the oldest
	// gives way.
	MaxPending int
	// Markers turns a joined op into marker events (nil:
	// inspector.ReferenceMarkers).
	Markers inspector.MarkerFunc
	// CommRanks fills Joined.CommRanks (the communicator's global ranks,
	// one allocation per record) for Markers that read it
	// (inspector.EvidenceMarker).
	CommRanks bool
}

// DefaultInspectorHostKeys and DefaultInspectorPIDKeys are the documented
// defaults of the process join keys.
func DefaultInspectorHostKeys() []string { return []string{"host.name", "k8s.pod.name"} }

// DefaultInspectorPIDKeys: see DefaultInspectorHostKeys.
func DefaultInspectorPIDKeys() []string { return []string{"process.pid"} }

const (
	defaultInspectorHold       = 30 * time.Second
	defaultInspectorMaxPending = 1 << 16
	// maxInspectorParsers bounds the per-file parsers (one per
	// log.file.path): past it they are all dropped and made anew, which
	// forgets the v4.3 dump_stats context of each file until its next dump
	// and restarts each file's count of P2P transfers (Op.PairSeq), so the
	// transfers read after it may be paired wrongly (README, NCCL Inspector
	// logs).
	maxInspectorParsers = 4096
)

func (cfg InspectorConfig) withDefaults() InspectorConfig {
	if len(cfg.HostKeys) == 0 {
		cfg.HostKeys = DefaultInspectorHostKeys()
	}
	if len(cfg.PIDKeys) == 0 {
		cfg.PIDKeys = DefaultInspectorPIDKeys()
	}
	if cfg.Hold <= 0 {
		cfg.Hold = defaultInspectorHold
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = defaultInspectorMaxPending
	}
	if cfg.Markers == nil {
		cfg.Markers = inspector.ReferenceMarkers
	}
	return cfg
}

// InspectorStats are the cumulative counts of Inspector records.
type InspectorStats struct {
	// Read counts the op records parsed; Joined those given to a rank;
	// Unjoinable those given up (also reported as unjoinable Skips);
	// Invalid those whose body was an Inspector record that failed to
	// parse (also reported as invalid_value Skips).
	Read, Joined, Unjoinable, Invalid uint64
	// Held is the number of records waiting for their rank's telemetry.
	Held int
	// Processes is the number of (host, pid) mappings.
	Processes int
	// InvalidOps, WrappedSizes and NaNBandwidths count accepted records
	// with the plugin's "Invalid" op name, a wrapped message size or a
	// "nan" bandwidth.
	InvalidOps, WrappedSizes, NaNBandwidths uint64
}

// inspectorConverter reads NCCL Inspector records, from log bodies (the
// log records that are not stormlog's) and from the plugin's OTLP
// metrics, and joins them to ranks by (host, pid). It holds the parsers per
// source file, the (host, pid) join, which the resources and stormlog
// records of every signal teach, the records waiting for it and the
// communicators' members.
type inspectorConverter struct {
	cfg           InspectorConfig
	maxFutureSkew time.Duration
	now           func() time.Time
	ids           *identityResolver
	// rec is the Record handed to emit, and jsonBuf a map body as JSON
	// text: reused so that nothing is allocated per record.
	rec     Record
	jsonBuf []byte
	parsers map[string]*inspector.Parser
	joiner  *inspector.Joiner
	pending *inspector.Pending
	members inspector.Members
	events  []telemetry.Event
	stats   InspectorStats
	// op and joined are the record being converted, kept here so that
	// neither is allocated per record.
	op     inspector.Op
	joined inspector.Joined
}

func newInspectorConverter(cfg *Config, ids *identityResolver, now func() time.Time) *inspectorConverter {
	return &inspectorConverter{
		cfg:           cfg.Inspector,
		maxFutureSkew: cfg.MaxFutureSkew,
		now:           now,
		ids:           ids,
		parsers:       map[string]*inspector.Parser{},
		joiner:        inspector.NewJoiner(cfg.IdentityTTL, cfg.MaxIdentityMappings, now),
		pending:       inspector.NewPending(cfg.Inspector.Hold, cfg.Inspector.MaxPending, now),
	}
}

// futureLimit is the newest acceptable record time.
func (c *inspectorConverter) futureLimit(nowNs int64) int64 { return nowNs + int64(c.maxFutureSkew) }

// parser is the Parser of the file a log record came from (its
// log.file.path, else log.file.name attribute; "" without either): a v4.3
// op line takes its header from the file's last dump_stats line, and a P2P
// record is numbered among the file's transfers of its direction.
func (c *inspectorConverter) parser(attrs pcommon.Map) *inspector.Parser {
	key := ""
	if v, ok := attrs.Get("log.file.path"); ok && v.Type() == pcommon.ValueTypeStr {
		key = v.Str()
	} else if v, ok := attrs.Get("log.file.name"); ok && v.Type() == pcommon.ValueTypeStr {
		key = v.Str()
	}
	p := c.parsers[key]
	if p == nil {
		if len(c.parsers) >= maxInspectorParsers {
			clear(c.parsers)
		}
		p = &inspector.Parser{}
		c.parsers[key] = p
	}
	return p
}

// inspectorText returns the JSON text of a log body that may be an
// Inspector record (ours), or ours=false. A string body is ours when it is
// a JSON object naming one of the record's sections; a map body when it
// has one of them as a key.
func (c *inspectorConverter) inspectorText(body pcommon.Value) (data []byte, ours bool, detail string) {
	switch body.Type() {
	case pcommon.ValueTypeStr:
		t := strings.TrimSpace(body.Str())
		if len(t) < 2 || t[0] != '{' || !looksInspector(t) {
			return nil, false, ""
		}
		c.jsonBuf = append(c.jsonBuf[:0], t...)
		return c.jsonBuf, true, ""
	case pcommon.ValueTypeMap:
		m := body.Map()
		_, coll := m.Get("coll_perf")
		_, p2p := m.Get("p2p_perf")
		_, hdr := m.Get("header")
		_, md := m.Get("metadata")
		if !coll && !p2p && !(hdr && md) {
			return nil, false, ""
		}
		buf, err := appendJSONValue(c.jsonBuf[:0], body, 0)
		c.jsonBuf = buf[:0]
		if err != "" {
			return nil, true, "NCCL Inspector record: " + err
		}
		return buf, true, ""
	}
	return nil, false, ""
}

const (
	keyCollPerf = `"coll_perf"`
	keyP2PPerf  = `"p2p_perf"`
	keyVersion  = `"inspector_output_format_version"`
	// headerStart is how the plugin begins every record but a v4.3 op line:
	// a line torn before its other keys is still recognised (and refused).
	headerStart = `{"header":`
)

// looksInspector is a cheap pre-filter: the parser decides.
func looksInspector(t string) bool {
	return strings.HasPrefix(t, headerStart) || strings.Contains(t, keyCollPerf) || strings.Contains(t, keyP2PPerf) || strings.Contains(t, keyVersion)
}

// convertInspector reads one log record's body as an Inspector record and
// reports whether it was one. A record joined to its rank becomes marker
// Records; one whose (host, pid) is not known yet waits (RetryInspector).
func (c *inspectorConverter) convertInspector(lr plog.LogRecord, nowNs int64, emit func(*Record), skip func(Skip)) bool {
	data, ours, detail := c.inspectorText(lr.Body())
	if !ours {
		return false
	}
	if detail != "" {
		c.stats.Invalid++
		skip(Skip{Reason: SkipInvalidValue, Detail: detail})
		return true
	}
	var err error
	c.op, err = c.parser(lr.Attributes()).Parse(data)
	op := &c.op
	switch {
	case errors.Is(err, inspector.ErrNotOpRecord):
		// A dump_stats context line, or another program's JSON.
		return true
	case err != nil:
		c.stats.Invalid++
		skip(Skip{Reason: SkipInvalidValue, Detail: "NCCL Inspector record: " + err.Error()})
		return true
	}
	c.stats.Read++
	if op.Flags&inspector.FlagInvalidOp != 0 {
		c.stats.InvalidOps++
	}
	if op.Flags&inspector.FlagWrappedSize != 0 {
		c.stats.WrappedSizes++
	}
	if op.Flags&inspector.FlagNaNBandwidth != 0 {
		c.stats.NaNBandwidths++
	}
	if op.EndNs > c.futureLimit(nowNs) {
		c.stats.Invalid++
		skip(Skip{Reason: SkipInvalidValue, Detail: "NCCL Inspector record time is too far in the future"})
		return true
	}
	owner, err := c.joiner.Join(op.Host, op.PID)
	if err != nil {
		c.pending.Add(op, func(old *inspector.Op, err error) { c.giveUpInspector(old, err, skip) })
		return true
	}
	c.emitInspector(op, owner, emit)
	return true
}

// emitInspector hands the marker events of a joined op to emit as
// stormlog marker Records of the owner's job and rank.
func (c *inspectorConverter) emitInspector(op *inspector.Op, owner inspector.Owner, emit func(*Record)) {
	c.stats.Joined++
	job := owner.Job()
	c.members.Learn(job, op, owner.Rank)
	c.joined = inspector.Joined{Op: op, Owner: owner}
	if c.cfg.CommRanks {
		c.joined.CommRanks = c.members.Ranks(job, op)
	}
	c.events = c.cfg.Markers(c.events[:0], &c.joined)
	jobName := c.ids.names.intern(job)
	host := c.ids.names.intern(op.Host)
	for i := range c.events {
		ev := &c.events[i]
		c.rec = Record{
			Kind:        KindStormlog,
			JobID:       jobName,
			Rank:        owner.Rank,
			WorldSize:   owner.WorldSize,
			Host:        host,
			TimestampNs: ev.TimestampNs,
			Event:       *ev,
		}
		c.rec.Stormlog = window.ClassifyStormlog(&c.rec.Event)
		emit(&c.rec)
	}
	clear(c.events)
	c.joined = inspector.Joined{}
}

func (c *inspectorConverter) giveUpInspector(op *inspector.Op, err error, skip func(Skip)) {
	c.stats.Unjoinable++
	skip(Skip{Reason: SkipUnjoinable, Detail: "NCCL Inspector record of " + op.Host + " pid " + strconv.FormatInt(op.PID, 10) + ": " + err.Error()})
}

// RetryInspector joins the Inspector records waiting for their rank's
// telemetry that now can be, gives up (unjoinable Skips) those held longer
// than the hold time, and expires the (host, pid) mappings. Call it on
// each tick.
func (c *Converter) RetryInspector() iter.Seq[Read] { return c.insp.retry() }

// retry is RetryInspector.
func (c *inspectorConverter) retry() iter.Seq[Read] {
	return func(yield func(Read) bool) {
		c.joiner.Expire()
		if c.pending.Len() == 0 {
			return
		}
		y := reads{yield: yield}
		c.pending.Retry(c.joiner,
			func(op *inspector.Op, owner inspector.Owner) { c.emitInspector(op, owner, y.record) },
			func(op *inspector.Op, err error) { c.giveUpInspector(op, err, y.skip) })
	}
}

// InspectorStats returns the cumulative Inspector counts and sizes.
func (c *Converter) InspectorStats() InspectorStats {
	st := c.insp.stats
	st.Held = c.insp.pending.Len()
	st.Processes = c.insp.joiner.Processes()
	return st
}

// learnStormlogProcess maps a stormlog record's (host, pid) to its job
// (the record's job as the processor resolved it) and rank.
func (c *inspectorConverter) learnStormlogProcess(ev *telemetry.Event, job string) {
	if ev.Host == "unknown" { // stormlog's placeholder names no host
		return
	}
	o := inspector.OwnerOf(ev)
	o.JobID = job
	_ = c.joiner.Learn(ev.Host, ev.PID, o)
}

// learnResourceProcess maps the (host, pid) of an OTLP resource that names
// both, and a rank, to that job and rank.
//
// A memoised reading (the same attributes at the same position as in the
// previous batch) keeps what its last Learn returned, and is learned again
// only when that is no longer Current at now: when the joiner's mappings
// changed otherwise than by last-seen times, or an eighth of the TTL has
// passed. Until then a Learn would only move the claim's last-seen time,
// so the mapping lives from TTL − TTL/8 to TTL after the rank's last item.
func (c *inspectorConverter) learnResourceProcess(rd *resourceReading, now time.Time) {
	if !rd.procOK || rd.detail != "" || !rd.id.hasRank || c.joiner.Current(rd.learned, now) {
		return
	}
	id := &rd.id
	rd.learned = c.joiner.Learn(rd.procHost, rd.procPID, inspector.Owner{
		JobID: id.job, Rank: id.rank, LocalRank: id.localRank, WorldSize: id.worldSize, DeviceID: id.devIndex,
	})
}

// learnMetricsProcesses and learnTracesProcesses learn the (host, pid) of
// every resource of a batch, reading the resources through the memo the
// conversion of the batch reads them through next.
func (c *inspectorConverter) learnMetricsProcesses(md pmetric.Metrics) {
	rms := md.ResourceMetrics()
	now := c.now()
	for i := 0; i < rms.Len(); i++ {
		c.learnResourceProcess(c.ids.readResource(&c.ids.metricsRes, i, rms.At(i).Resource().Attributes()), now)
	}
}

func (c *inspectorConverter) learnTracesProcesses(td ptrace.Traces) {
	rss := td.ResourceSpans()
	now := c.now()
	for i := 0; i < rss.Len(); i++ {
		c.learnResourceProcess(c.ids.readResource(&c.ids.tracesRes, i, rss.At(i).Resource().Attributes()), now)
	}
}
