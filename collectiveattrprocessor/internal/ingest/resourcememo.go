package ingest

import (
	"math"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// maxResourceMemos bounds the resource positions remembered per signal.
const maxResourceMemos = 4096

// resourceMemo is what a resource resolved to when its identity alone named
// a rank: exporters send the same resources, in the same order, batch after
// batch, and comparing a resource's attributes with the memo of its
// position costs a fraction of scanning, resolving, interning and looking
// up its join buffer again. The attributes are copied, so no request memory
// is pinned. A memo holds while the attributes are the same (its join
// buffer, while not forgotten: epoch); the device mapping it names is
// refreshed every learnRefresh, as without it.
type resourceMemo struct {
	attrs     []scalarAttr
	id        identity
	valid     bool
	learnedNs int64
	// series is the join buffer of id (metrics; nil until known), valid
	// while the Converter's seriesEpoch is epoch.
	series *series
	epoch  uint64
}

// scalarAttr is a copied string, int, double or bool attribute.
type scalarAttr struct {
	key string
	typ pcommon.ValueType
	str string
	num uint64 // int, double bits, or bool
}

func (m *resourceMemo) holds(attrs pcommon.Map) bool {
	if !m.valid || len(m.attrs) != attrs.Len() {
		return false
	}
	j := 0
	for k, v := range attrs.All() {
		a := &m.attrs[j]
		if a.key != k || a.typ != v.Type() {
			return false
		}
		switch a.typ {
		case pcommon.ValueTypeStr:
			if a.str != v.Str() {
				return false
			}
		case pcommon.ValueTypeInt:
			if a.num != uint64(v.Int()) {
				return false
			}
		case pcommon.ValueTypeDouble:
			if a.num != math.Float64bits(v.Double()) {
				return false
			}
		case pcommon.ValueTypeBool:
			if (a.num != 0) != v.Bool() {
				return false
			}
		}
		j++
	}
	return true
}

// remember copies attrs into the memo; it reports false, leaving the memo
// empty, when an attribute is not a scalar.
func (m *resourceMemo) remember(attrs pcommon.Map) bool {
	m.attrs = m.attrs[:0]
	for k, v := range attrs.All() {
		a := scalarAttr{key: strings.Clone(k), typ: v.Type()}
		switch a.typ {
		case pcommon.ValueTypeStr:
			a.str = strings.Clone(v.Str())
		case pcommon.ValueTypeInt:
			a.num = uint64(v.Int())
		case pcommon.ValueTypeDouble:
			a.num = math.Float64bits(v.Double())
		case pcommon.ValueTypeBool:
			if v.Bool() {
				a.num = 1
			}
		default:
			m.attrs = m.attrs[:0]
			return false
		}
		m.attrs = append(m.attrs, a)
	}
	return true
}
