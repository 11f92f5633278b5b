package ingest

import (
	"encoding/binary"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/internal/slots"
)

// spanIndex finds the spans of one batch by trace and span id, for the
// phase ancestor walk. It is an open-addressing table on the span id, built
// once per batch that needs it: a Go map hashed the 24-byte key of every
// span of the batch and cost more than the rest of the conversion. An entry
// holds the span id and the span; the trace id is compared only when the
// span ids match, and a span's phase facts are read when the walk first
// reaches it. When two spans share an id, the later one is found, as a map
// assignment would leave it.
type spanIndex struct {
	slots   slots.Table // of entries
	entries []indexedSpan
}

type indexedSpan struct {
	id    uint64
	span  ptrace.Span
	facts phaseFacts
}

// phaseFacts is what the ancestor walk needs to know of a span beyond its
// name and parent.
type phaseFacts struct {
	read    bool
	isPhase bool
	hasPath bool // phase.path is set: Get it again when needed
}

// build indexes every span of td.
func (x *spanIndex) build(td ptrace.Traces) {
	x.slots.Reset(td.SpanCount())
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				x.insert(spans.At(k))
			}
		}
	}
}

func spanIDKey(id pcommon.SpanID) uint64 { return binary.LittleEndian.Uint64(id[:]) }

func (x *spanIndex) insert(sp ptrace.Span) {
	id := spanIDKey(sp.SpanID())
	for h := x.slots.Home(id); ; h = x.slots.Next(h) {
		s := x.slots.S[h]
		if s == 0 {
			x.entries = append(x.entries, indexedSpan{id: id, span: sp})
			x.slots.S[h] = int32(len(x.entries))
			return
		}
		if e := &x.entries[s-1]; e.id == id && e.span.TraceID() == sp.TraceID() {
			e.span = sp
			return
		}
	}
}

// find returns the indexed span of trace and span id, or nil.
func (x *spanIndex) find(trace pcommon.TraceID, span pcommon.SpanID) *indexedSpan {
	if len(x.entries) == 0 {
		return nil
	}
	id := spanIDKey(span)
	for h := x.slots.Home(id); ; h = x.slots.Next(h) {
		s := x.slots.S[h]
		if s == 0 {
			return nil
		}
		if e := &x.entries[s-1]; e.id == id && e.span.TraceID() == trace {
			return e
		}
	}
}

// maxKeptIndex is the most spans whose index memory is kept between calls:
// two default batch processor batches, while one huge batch pins nothing.
const maxKeptIndex = 1 << 14

// reset forgets the batch: entries point into its spans.
func (x *spanIndex) reset() {
	clear(x.entries)
	x.entries = x.entries[:0]
	if cap(x.entries) > maxKeptIndex {
		x.entries, x.slots.S = nil, nil
	}
}

func (x *spanIndex) len() int { return len(x.entries) }
