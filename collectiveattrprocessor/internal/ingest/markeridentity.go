package ingest

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/collectiveattr/collectiveattr/evidence"
)

// With Config.Reads.CollectiveMarkers a marker span or a marker span
// event carries the collective identity its attributes name
// (docs/evidence-mode.md §2.1): the same keys, read with the same rules,
// as evidence.MetadataMarker reads them from a stormlog record's metadata,
// so that a job sent as OTLP spans and the same job sent as stormlog
// records give the same markers. An attribute of the wrong type counts as
// absent, as a metadata value of the wrong type does: a marker whose
// communicator or sequence number is unusable is a bare marker (its
// interval, no collective), never a skipped item.

// markerAttrs is what one span's or span event's identity attributes hold.
// ranks is the nccl.comm.ranks value, read when the table asks; it
// points into the request and is dropped with the span.
type markerAttrs struct {
	id       evidence.Identity
	hasComm  bool
	hasSeq   bool
	ranks    pcommon.Value
	hasRanks bool
}

// isIdentityKey reports whether an attribute key may hold a part of the
// collective identity.
func isIdentityKey(k string) bool {
	return strings.HasPrefix(k, "nccl.")
}

// read takes one attribute whose key isIdentityKey accepted.
func (a *markerAttrs) read(k string, v pcommon.Value) {
	switch k {
	case evidence.KeyCommID:
		if v.Type() == pcommon.ValueTypeStr {
			a.id.CommID, a.hasComm = v.Str(), true
		}
	case evidence.KeySeq:
		a.id.Seq, a.hasSeq = identityInt(v)
	case evidence.KeyOp:
		if v.Type() == pcommon.ValueTypeStr {
			a.id.Op = v.Str()
		}
	case evidence.KeyMessageBytes:
		a.id.MessageBytes, _ = identityInt(v)
	case evidence.KeyCommNRanks:
		a.id.NRanks, _ = identityInt(v)
	case evidence.KeyCommRanks:
		if v.Type() == pcommon.ValueTypeSlice && v.Slice().Len() > 0 {
			a.ranks, a.hasRanks = v, true
		}
	}
}

// readAll reads the identity attributes of m.
func (a *markerAttrs) readAll(m pcommon.Map) {
	for k, v := range m.All() {
		if isIdentityKey(k) {
			a.read(k, v)
		}
	}
}

// identity returns the identity read; its members, when listed, are read
// only if the collective table asks (evidence.RankReader), through an
// entry appended to *lists.
func (a *markerAttrs) identity(lists *[]memberList) evidence.Identity {
	id := a.id
	id.Valid = a.hasComm && a.hasSeq
	if !id.Valid {
		return evidence.Identity{}
	}
	if a.hasRanks {
		*lists = append(*lists, memberList{a.ranks.Slice()})
		id.RanksOf = &(*lists)[len(*lists)-1]
	}
	return id
}

// memberList is a marker's nccl.comm.ranks attribute, read on demand: the
// table reads one list per collective instance, though every member's
// marker repeats it. It points into the request.
type memberList struct{ s pcommon.Slice }

// AppendRanks appends the list's integer entries (evidence.RankReader).
func (l *memberList) AppendRanks(dst []int64) []int64 {
	for i := range l.s.Len() {
		if r, ok := identityInt(l.s.At(i)); ok {
			dst = append(dst, r)
		}
	}
	if dst == nil {
		// Non-nil even when no entry was an integer (evidence.Identity).
		dst = []int64{}
	}
	return dst
}

// identityInt reads an integer attribute as evidence.MetadataInt reads a
// metadata value: an int, or a double with an integral value in range. A
// string is no integer (a JSON string is none either).
func identityInt(v pcommon.Value) (int64, bool) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return v.Int(), true
	case pcommon.ValueTypeDouble:
		return evidence.MetadataInt(v.Double())
	}
	return 0, false
}
