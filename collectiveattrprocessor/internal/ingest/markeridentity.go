package ingest

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/collectiveattr/collectiveattr/evidence"
)

// Evidence mode reads the collective identity a marker span or a marker
// span event carries in its attributes (docs/evidence-mode.md §2.1): the
// same keys, read with the same rules, as evidence.Builder reads them from
// a stormlog record's metadata, so that a job sent as OTLP spans and the
// same job sent as stormlog records give the same markers. An attribute of
// the wrong type counts as absent, as a metadata value of the wrong type
// does: a marker whose communicator or sequence number is unusable is a
// bare marker (its interval, no collective), never a skipped item.

// markerAttrs is what one span's or span event's identity attributes hold.
// ranks is the nccl.comm.ranks value, read when the marker is kept; it
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

// identity returns the identity read, its members appended to *ranks (a
// scratch the identity's Ranks then points into).
func (a *markerAttrs) identity(ranks *[]int64) evidence.Identity {
	id := a.id
	id.Valid = a.hasComm && a.hasSeq
	if !id.Valid {
		return evidence.Identity{}
	}
	if a.hasRanks {
		from := len(*ranks)
		s := a.ranks.Slice()
		for i := range s.Len() {
			if r, ok := identityInt(s.At(i)); ok {
				*ranks = append(*ranks, r)
			}
		}
		// Non-nil even when no entry was an integer (evidence.Identity).
		id.Ranks = (*ranks)[from:len(*ranks):len(*ranks)]
		if id.Ranks == nil {
			id.Ranks = []int64{}
		}
	}
	return id
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
