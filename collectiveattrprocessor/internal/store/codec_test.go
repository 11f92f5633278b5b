package store

import (
	"encoding/binary"
	"errors"
)

// The checkpoint's wire format as README.md (Checkpoints) defines it,
// written here from that definition so that the tests that craft or edit
// checkpoint bytes check the window's codec against it.
const (
	checkpointMagic = "CAJ\x00"

	tagJob         = 1
	tagRank        = 2
	tagCollectives = 4
	tagMode        = 5
	tagFileLines   = 6

	tagRankMeta            = 1
	tagRankEvidenceMarkers = 8
	tagRankAccounting      = 9

	markerNoSpan   = 0
	markerSameSpan = 1
	markerNewSpan  = 2
)

// ckptWriter writes the format's primitives: varints, length-prefixed
// strings, and sections (a uvarint tag, a 4-byte little-endian length,
// the body).
type ckptWriter struct{ b []byte }

func (w *ckptWriter) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *ckptWriter) varint(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *ckptWriter) str(s string)     { w.uvarint(uint64(len(s))); w.b = append(w.b, s...) }
func (w *ckptWriter) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *ckptWriter) section(tag uint64, body func(w *ckptWriter)) {
	w.uvarint(tag)
	at := len(w.b)
	w.b = append(w.b, 0, 0, 0, 0)
	body(w)
	binary.LittleEndian.PutUint32(w.b[at:], uint32(len(w.b)-at-4))
}

// ckptReader reads a version and sections of what ckptWriter wrote.
type ckptReader struct {
	b   []byte
	err error
}

var errTruncated = errors.New("truncated checkpoint")

func (r *ckptReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errTruncated
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *ckptReader) section() (tag uint64, body *ckptReader, ok bool) {
	if len(r.b) == 0 || r.err != nil {
		return 0, nil, false
	}
	tag = r.uvarint()
	if r.err != nil || len(r.b) < 4 {
		r.err = errTruncated
		return 0, nil, false
	}
	n := int(binary.LittleEndian.Uint32(r.b))
	if len(r.b)-4 < n {
		r.err = errTruncated
		return 0, nil, false
	}
	body = &ckptReader{b: r.b[4 : 4+n]}
	r.b = r.b[4+n:]
	return tag, body, true
}
