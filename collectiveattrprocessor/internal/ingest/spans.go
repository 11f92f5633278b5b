package ingest

import (
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/window"
)

const (
	// PhasePathAttribute holds a phase span's path: "a / b" or a string array.
	PhasePathAttribute = "phase.path"
	// ThreadIDAttribute and ThreadNameAttribute are the semconv thread keys
	// that place a phase span on a thread (contract §3.2).
	ThreadIDAttribute   = "thread.id"
	ThreadNameAttribute = "thread.name"

	// resultSpanName and resultClassAttribute identify the processor's own
	// result spans, which must not count as marker spans when a second
	// collector tier (or a loop) feeds them back: their name contains
	// "collective".
	resultSpanName       = "collective_attribution"
	resultClassAttribute = "collective_attribution.classification"

	// MaxPhaseDepth bounds the ancestor walk (and breaks parent cycles),
	// here and where the window completes paths across batches.
	MaxPhaseDepth = window.MaxPhaseDepth
)

// tracesConverter turns spans into marker runs and phase span Records.
type tracesConverter struct {
	cfg   *Config
	now   func() time.Time
	ids   *identityResolver
	phase phaseNames

	// The batch's span index for the ancestor walk (built only when
	// needed, reset after each call), the walk's scratch (cleared after
	// each call), the shared phase paths and the scope ids' blocks.
	spanIdx     spanIndex
	tokens      tokenCache
	nameScratch []string
	pathScratch []string
	paths       phasePaths
	scopeIDs    scopeIDs

	// phaseRec is the Record handed to emit for phase spans: only its
	// phase span fields are ever set, so it needs no clearing between
	// spans.
	phaseRec Record
	// markerRun is the MarkerRun being built, its spans' times in
	// markerTimes.
	markerRun   MarkerRun
	markerTimes []int64
	// With Config.Reads.CollectiveMarkers: the markers' ends and identities beside
	// markerTimes, the identities' member lists, and the identity
	// attributes of the span being scanned.
	markerEnds  []int64
	markerIDs   []evidence.Identity
	markerLists []memberList
	spanAttrs   markerAttrs
}

func newTracesConverter(cfg *Config, ids *identityResolver, now func() time.Time) *tracesConverter {
	var phaseSpanNames []string
	if !cfg.NoPhaseSpans {
		phaseSpanNames = cfg.PhaseSpanNames
	}
	return &tracesConverter{cfg: cfg, now: now, ids: ids, phase: newPhaseNames(phaseSpanNames)}
}

// convertTraces hands the markers of spans to emitMarkers, in one MarkerRun
// per run of spans of one (job, rank), and phase spans to emit as
// KindPhaseSpan Records (contract §3.2); both in input order. A marker span
// (name or a string attribute value of the span or of its events matches a
// collective token) gives a marker time at its start and one at its end,
// equal or not, as the contract lists them: the reference counts every
// marker time (marker_hits), and a zero-duration span is still a start and
// an end. Every span event whose name matches gives one more, whether or
// not its span is a marker span: a compute span with an NCCL launch event
// marks the event's time, not the span's. A span can be both markers and a
// phase span. Spans that are neither are ignored without a Skip; with
// NoPhaseSpans, no span is a phase span.
//
// A phase span without `phase.path` takes as path the names of its phase
// ancestors found in the same batch, then its own name. When the walk
// reaches a parent the batch does not hold (an SDK exports a parent after
// its children), the Record names that parent (PhaseParentID) so that the
// processor can complete the path once the parent, a phase span, arrives.
func (c *tracesConverter) convertTraces(td ptrace.Traces, emit func(*Record), emitMarkers func(*MarkerRun), skip func(Skip)) {
	nowNs := c.now().UnixNano()
	indexed := false
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		resStarted := false
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				marker, markedEvents, pathAttr, hasPath := c.scanSpan(sp)
				isPhase := hasPath && !c.cfg.NoPhaseSpans
				if !isPhase && !c.phase.empty() {
					isPhase = c.phase.has(sp.Name())
				}
				if !marker && !markedEvents && !isPhase {
					continue
				}
				start, end := int64(sp.StartTimestamp()), int64(sp.EndTimestamp())
				if end > c.cfg.futureLimit(nowNs) {
					skip(futureSkip)
					continue
				}
				if start <= 0 || end < start {
					skip(Skip{Reason: SkipInvalidValue, Detail: "span start/end is missing or reversed"})
					continue
				}
				if !resStarted {
					c.ids.startResource(rs.Resource().Attributes(), &c.ids.tracesRes, i)
					resStarted = true
				}
				if reason, detail := c.ids.identifyScanned(nowNs); reason != "" {
					skip(Skip{Reason: reason, Detail: detail})
					continue
				}
				if marker || markedEvents {
					c.emitMarkers(sp, marker, start, end, nowNs, emitMarkers, skip)
				}
				if !isPhase {
					continue
				}
				var path []string
				var missing pcommon.SpanID
				if hasPath {
					c.pathScratch = appendPhaseParts(c.pathScratch[:0], pathAttr)
					path = c.sharedPath(c.pathScratch)
				} else {
					if !indexed && !sp.ParentSpanID().IsEmpty() {
						c.spanIdx.build(td)
						indexed = true
					}
					path, missing = c.ancestorPath(sp)
				}
				if len(path) == 0 {
					skip(Skip{Reason: SkipInvalidValue, Detail: "phase.path holds no non-empty name"})
					continue
				}
				c.flushMarkers(emitMarkers)
				emit(c.phaseRecord(sp, path, missing, start, end))
			}
		}
	}
	c.flushMarkers(emitMarkers)
	c.spanAttrs = markerAttrs{} // its values point into the request
	if indexed {
		c.spanIdx.reset()
	}
	// The path scratch holds names of the request's spans.
	clear(c.nameScratch[:cap(c.nameScratch)])
	clear(c.pathScratch[:cap(c.pathScratch)])
	c.nameScratch, c.pathScratch = keptScratch(c.nameScratch), keptScratch(c.pathScratch)
	c.ids.dropRequest()
}

// scanSpan reads a span's attributes in one pass: its identity keys (into
// c.ids.itemID, for identifyScanned), its phase.path, and whether it is a marker
// span: its name, or a string value of its attributes or of its events'
// attributes (nested values included), matches a collective token
// (reference §2.3 S2a). Identity attributes count like any other: the
// contract says any string attribute value. For a span that is no marker
// span, markedEvents says some span event's name matches (a marker span's
// events are matched once, by emitMarkers). The processor's own result
// spans give no markers.
func (c *tracesConverter) scanSpan(sp ptrace.Span) (marker, markedEvents bool, path pcommon.Value, hasPath bool) {
	name := sp.Name()
	marker = c.tokens.matches(name)
	isResult := false
	// Loaded once: the loop below runs per attribute, and the compiler
	// reloads what it reaches through c.ids after each call.
	keys, item := c.ids.keys, &c.ids.itemID
	item.reset()
	collective := c.cfg.Reads.CollectiveMarkers
	if collective {
		c.spanAttrs = markerAttrs{}
	}
	attrs := sp.Attributes()
	if attrs.Len() > 0 {
		for k, v := range attrs.All() {
			if collective && isIdentityKey(k) {
				c.spanAttrs.read(k, v)
			}
			if keys.mayHold(k) {
				for _, s := range keys.lookup(k) {
					item.offer(s, v)
				}
			}
			switch k {
			case PhasePathAttribute:
				if !hasPath { // the first, as Map.Get would find
					path, hasPath = v, true
				}
			case resultClassAttribute:
				isResult = true
			}
			if !marker && c.valueMatches(v, 0) {
				marker = true
			}
		}
	}
	if isResult && name == resultSpanName {
		return false, false, path, hasPath
	}
	// A span that names its collective is a marker span when markers are
	// read as collectives, token or not, as a stormlog record with an
	// identity is a marker.
	if marker || collective && c.spanAttrs.hasComm && c.spanAttrs.hasSeq {
		return true, false, path, hasPath
	}
	evs := sp.Events()
	for i := 0; i < evs.Len(); i++ {
		ev := evs.At(i)
		if c.mapMatches(ev.Attributes()) {
			return true, false, path, hasPath
		}
		if !markedEvents && c.tokens.matches(ev.Name()) {
			markedEvents = true
		}
	}
	return false, markedEvents, path, hasPath
}

// mapMatches reports whether a string value of m (nested values included)
// matches a collective token.
func (c *tracesConverter) mapMatches(m pcommon.Map) bool {
	for _, v := range m.All() {
		if c.valueMatches(v, 0) {
			return true
		}
	}
	return false
}

func (c *tracesConverter) valueMatches(v pcommon.Value, depth int) bool {
	if depth > MaxPhaseDepth {
		return false
	}
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return c.tokens.matches(v.Str())
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		for i := 0; i < s.Len(); i++ {
			if c.valueMatches(s.At(i), depth+1) {
				return true
			}
		}
	case pcommon.ValueTypeMap:
		for _, e := range v.Map().All() {
			if c.valueMatches(e, depth+1) {
				return true
			}
		}
	}
	return false
}

// emitMarkers adds the marker times of sp to the current marker run: its
// start and end when it is a marker span, and the time of each span event
// whose name matches. With Config.Reads.CollectiveMarkers a marker span is one marker,
// from its start to its end, and each marker carries the collective
// identity its span's (or event's) attributes give.
func (c *tracesConverter) emitMarkers(sp ptrace.Span, markerSpan bool, start, end, nowNs int64, emit func(*MarkerRun), skip func(Skip)) {
	c.beginMarkerSpan(emit)
	collective := c.cfg.Reads.CollectiveMarkers
	from := len(c.markerTimes)
	if markerSpan {
		if collective {
			c.markerTimes = append(c.markerTimes, start)
			c.markerEnds = append(c.markerEnds, end)
			c.markerIDs = append(c.markerIDs, c.spanAttrs.identity(&c.markerLists))
		} else {
			c.markerTimes = append(c.markerTimes, start, end)
		}
	}
	evs := sp.Events()
	for i := 0; i < evs.Len(); i++ {
		e := evs.At(i)
		if !c.tokens.matches(e.Name()) {
			continue
		}
		ts := int64(e.Timestamp())
		if ts > c.cfg.futureLimit(nowNs) {
			skip(futureSkip)
			continue
		}
		if ts <= 0 {
			skip(Skip{Reason: SkipInvalidValue, Detail: "span event timestamp is missing"})
			continue
		}
		c.markerTimes = append(c.markerTimes, ts)
		if collective {
			var a markerAttrs
			a.readAll(e.Attributes())
			c.markerEnds = append(c.markerEnds, ts)
			c.markerIDs = append(c.markerIDs, a.identity(&c.markerLists))
		}
	}
	if len(c.markerTimes) == from {
		return // only events, every one with a bad timestamp
	}
	c.addMarkerSpan(SpanRef{TraceID: sp.TraceID(), SpanID: sp.SpanID()}, from)
}

// phaseRecord builds the phase span of sp, whose path is missing the
// ancestors of parent when that is not empty. Sequence is the start time,
// so that the reference's "most recent" (max sequence) is the
// latest-started span; ScopeID is the span id in hex. TimestampNs is the
// end: a phase is relevant while any part of it is inside the window.
func (c *tracesConverter) phaseRecord(sp ptrace.Span, path []string, parent pcommon.SpanID, start, end int64) *Record {
	rec := &c.phaseRec
	rec.Kind, rec.JobID, rec.Rank, rec.WorldSize, rec.Host, rec.TimestampNs = KindPhaseSpan, c.ids.id.job, c.ids.id.rank, c.ids.id.worldSize, c.ids.id.host, end
	rec.PhaseTraceID, rec.PhaseParentID = sp.TraceID(), parent
	var threadID int64
	var threadName string
	attrs := sp.Attributes()
	if v, ok := attrs.Get(ThreadIDAttribute); ok {
		threadID, _ = intValue(v)
	}
	if v, ok := attrs.Get(ThreadNameAttribute); ok && v.Type() == pcommon.ValueTypeStr {
		threadName = c.ids.names.intern(v.Str())
	}
	rec.PhaseSpan = phase.Span{
		SessionID:  c.ids.session(),
		Rank:       c.ids.id.rank,
		ThreadID:   threadID,
		ThreadName: threadName,
		ScopeID:    c.scopeIDs.of(sp.SpanID()),
		Path:       path,
		StartNs:    start,
		EndNs:      end,
		Sequence:   start,
	}
	return rec
}

// appendPhaseParts appends the names of a phase.path value: a string
// array's non-empty entries (as the reference keeps a boundary's path
// entries), or the parts of a string "a / b" split on "/", trimmed, empty
// ones dropped. The names are the request's: sharedPath interns them.
func appendPhaseParts(dst []string, v pcommon.Value) []string {
	switch v.Type() {
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		for i := 0; i < s.Len(); i++ {
			if e := s.At(i); e.Type() == pcommon.ValueTypeStr && e.Str() != "" {
				dst = append(dst, e.Str())
			}
		}
	case pcommon.ValueTypeStr:
		for part := range strings.SplitSeq(v.Str(), "/") {
			if part = strings.TrimSpace(part); part != "" {
				dst = append(dst, part)
			}
		}
	}
	return dst
}

// ancestorPath is the names of sp's phase ancestors within the batch
// (outermost first; an ancestor with phase.path contributes its whole path
// and ends the walk), then sp's own name; and missing, the id of the parent
// where the walk left the batch (empty when it ended at a root, a
// phase.path or the depth bound).
func (c *tracesConverter) ancestorPath(sp ptrace.Span) (path []string, missing pcommon.SpanID) {
	rev := append(c.nameScratch[:0], sp.Name())
	parts := c.pathScratch[:0]
	parent := sp.ParentSpanID()
	for depth := 0; !parent.IsEmpty() && depth < MaxPhaseDepth; depth++ {
		anc := c.spanIdx.find(sp.TraceID(), parent)
		if anc == nil {
			missing = parent
			break
		}
		f := c.phaseFactsOf(anc)
		if f.isPhase {
			if f.hasPath {
				path, _ := anc.span.Attributes().Get(PhasePathAttribute)
				parts = appendPhaseParts(parts, path)
				break
			}
			rev = append(rev, anc.span.Name())
		}
		parent = anc.span.ParentSpanID()
	}
	for i := len(rev) - 1; i >= 0; i-- {
		if n := strings.TrimSpace(rev[i]); n != "" {
			parts = append(parts, n)
		}
	}
	c.nameScratch, c.pathScratch = rev, parts
	return c.sharedPath(parts), missing
}

// phaseFactsOf reads, once per batch, whether an indexed span is a phase
// span and whether it has a phase.path.
func (c *tracesConverter) phaseFactsOf(s *indexedSpan) *phaseFacts {
	f := &s.facts
	if !f.read {
		f.read = true
		if _, ok := s.span.Attributes().Get(PhasePathAttribute); ok {
			f.isPhase, f.hasPath = true, true
		} else {
			f.isPhase = c.phase.has(s.span.Name())
		}
	}
	return f
}
