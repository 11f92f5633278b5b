package ingest

import (
	"math"

	"github.com/collectiveattr/collectiveattr/inspector"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// resourceReading is what a resource's attributes alone say about
// identity: the identity its identity keys resolve to (resolve with no item
// attributes, before the limits and the device map) or why they do not,
// and the (host, pid) the NCCL Inspector join learns from it. But for
// learned, it is a function of the attributes and the configuration only.
type resourceReading struct {
	id     identity
	detail string // resolve's refusal, "" when id is valid
	// procHost and procPID are the process the resource names by the
	// Inspector's keys (InspectorConfig.HostKeys, PIDKeys); procOK says it
	// names one.
	procHost string
	procPID  int64
	procOK   bool
	// learned is what the joiner's Learn of this reading's process last
	// returned (learnResourceProcess): not a function of the attributes,
	// but kept with them, so that an unchanged resource is learned again
	// only when that is no longer current.
	learned inspector.Learned
}

// resourceMemo keeps the reading of each resource of the previous batch
// of one signal, by the resource's position in its batch. Exporters send
// the same resources in the same order batch after batch (one per rank
// and process), so comparing a resource's attributes with the ones at its
// position last time costs a fraction of scanning and resolving them
// again, and the Inspector's (host, pid) learning and the conversion that
// follows it share one reading. The memo copies what it compares and
// holds no request memory between calls.
type resourceMemo struct {
	entries []memoEntry
	// gen numbers the calls (next), so that a resource read once in a call
	// is known again by its attribute map alone.
	gen uint64
	// holdsMaps says some entry refers to the call's attribute maps.
	holdsMaps bool
}

// maxMemoResources bounds the positions memoised: a batch's resources past
// it are read each time.
const maxMemoResources = 4096

type memoEntry struct {
	valid   bool
	reading resourceReading
	// buf holds the keys and string values of the attributes back to back;
	// attrs describe them in order.
	buf   []byte
	attrs []flatAttr
	// seen is the attribute map this entry matched in call seenGen.
	seen    pcommon.Map
	seenGen uint64
}

// flatAttr is one attribute of a memoised resource: its key is
// buf[start:keyEnd], a string value buf[keyEnd:end], other scalars in num.
type flatAttr struct {
	start, keyEnd, end int
	typ                pcommon.ValueType
	num                uint64
}

// next starts a call.
func (m *resourceMemo) next() { m.gen++ }

// drop lets go of the call's attribute maps.
func (m *resourceMemo) drop() {
	if !m.holdsMaps {
		return
	}
	for i := range m.entries {
		m.entries[i].seen = pcommon.Map{}
	}
	m.holdsMaps = false
}

// lookup returns the reading of the resource at position i of the call
// with attributes attrs, or nil when the memo does not hold it.
func (m *resourceMemo) lookup(i int, attrs pcommon.Map) *resourceReading {
	if i >= len(m.entries) {
		return nil
	}
	e := &m.entries[i]
	if !e.valid {
		return nil
	}
	if e.seenGen == m.gen && e.seen == attrs {
		return &e.reading
	}
	if !e.holds(attrs) {
		return nil
	}
	e.seen, e.seenGen = attrs, m.gen
	m.holdsMaps = true
	return &e.reading
}

// holds reports whether attrs are the attributes e was filled from.
func (e *memoEntry) holds(attrs pcommon.Map) bool {
	if attrs.Len() != len(e.attrs) {
		return false
	}
	i := 0
	for k, v := range attrs.All() {
		a := &e.attrs[i]
		i++
		if string(e.buf[a.start:a.keyEnd]) != k || v.Type() != a.typ {
			return false
		}
		switch a.typ {
		case pcommon.ValueTypeStr:
			if string(e.buf[a.keyEnd:a.end]) != v.Str() {
				return false
			}
		case pcommon.ValueTypeInt:
			if uint64(v.Int()) != a.num {
				return false
			}
		case pcommon.ValueTypeDouble:
			if math.Float64bits(v.Double()) != a.num {
				return false
			}
		case pcommon.ValueTypeBool:
			if v.Bool() != (a.num != 0) {
				return false
			}
		}
	}
	return true
}

// store makes rd the reading of the resource at position i with
// attributes attrs, and reports whether it did: a resource with an
// attribute that is not a scalar is not memoised (it is read each time);
// nor are positions past maxMemoResources.
func (m *resourceMemo) store(i int, attrs pcommon.Map, rd *resourceReading) bool {
	if i >= maxMemoResources {
		return false
	}
	if i >= len(m.entries) {
		m.entries = append(m.entries, make([]memoEntry, i+1-len(m.entries))...)
	}
	e := &m.entries[i]
	e.valid = false
	e.buf, e.attrs = e.buf[:0], e.attrs[:0]
	for k, v := range attrs.All() {
		a := flatAttr{start: len(e.buf), typ: v.Type()}
		e.buf = append(e.buf, k...)
		a.keyEnd = len(e.buf)
		switch a.typ {
		case pcommon.ValueTypeStr:
			e.buf = append(e.buf, v.Str()...)
		case pcommon.ValueTypeInt:
			a.num = uint64(v.Int())
		case pcommon.ValueTypeDouble:
			a.num = math.Float64bits(v.Double())
		case pcommon.ValueTypeBool:
			if v.Bool() {
				a.num = 1
			}
		case pcommon.ValueTypeEmpty:
		default:
			return false
		}
		a.end = len(e.buf)
		e.attrs = append(e.attrs, a)
	}
	e.reading = *rd
	e.valid, e.seen, e.seenGen = true, attrs, m.gen
	m.holdsMaps = true
	return true
}
