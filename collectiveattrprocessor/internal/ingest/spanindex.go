package ingest

import (
	"encoding/binary"
	"math/bits"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
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
	// slots hold 1 + an index into entries, 0 when empty; their number is
	// a power of two at least twice the entries.
	slots   []int32
	entries []indexedSpan
	shift   uint8
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
	n := td.SpanCount()
	size := 8
	for size < 2*n {
		size *= 2
	}
	if cap(x.slots) >= size {
		x.slots = x.slots[:size]
		clear(x.slots)
	} else {
		x.slots = make([]int32, size)
	}
	x.shift = uint8(64 - bits.TrailingZeros(uint(size)))
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

func (x *spanIndex) home(id uint64) int {
	return int(id * 0x9E3779B97F4A7C15 >> x.shift)
}

func (x *spanIndex) insert(sp ptrace.Span) {
	id := spanIDKey(sp.SpanID())
	mask := len(x.slots) - 1
	for h := x.home(id); ; h = (h + 1) & mask {
		s := x.slots[h]
		if s == 0 {
			x.entries = append(x.entries, indexedSpan{id: id, span: sp})
			x.slots[h] = int32(len(x.entries))
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
	mask := len(x.slots) - 1
	for h := x.home(id); ; h = (h + 1) & mask {
		s := x.slots[h]
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
		x.entries, x.slots = nil, nil
	}
}

func (x *spanIndex) len() int { return len(x.entries) }
