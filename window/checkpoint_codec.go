package window

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrCheckpoint wraps every error decoding a checkpoint: corrupt bytes, a
// version this build does not read, or state the owner's limits refuse.
var ErrCheckpoint = errors.New("invalid checkpoint")

// CheckpointWriter appends the checkpoint encoding's primitives: varints,
// length-prefixed strings and bytes, and sections (a tag and the length of
// what follows, so that a reader can tell where a section ends).
type CheckpointWriter struct{ b []byte }

func (w *CheckpointWriter) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *CheckpointWriter) varint(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *CheckpointWriter) bytes(p []byte)   { w.uvarint(uint64(len(p))); w.b = append(w.b, p...) }
func (w *CheckpointWriter) str(s string)     { w.uvarint(uint64(len(s))); w.b = append(w.b, s...) }
func (w *CheckpointWriter) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// section writes tag, then the length of what body writes as 4 bytes
// (little endian), then that: a fixed-size length is filled in once the body
// is written, where a varint would have to move the body.
func (w *CheckpointWriter) section(tag uint64, body func(w *CheckpointWriter)) {
	w.uvarint(tag)
	at := len(w.b)
	w.b = append(w.b, 0, 0, 0, 0)
	body(w)
	binary.LittleEndian.PutUint32(w.b[at:], uint32(len(w.b)-at-4))
}

// CheckpointReader reads what CheckpointWriter wrote. The first error sticks: every
// later read returns a zero value, and err says what went wrong first, so
// that a decoder checks it once per section rather than per field.
type CheckpointReader struct {
	b   []byte
	err error
}

func (r *CheckpointReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrCheckpoint, fmt.Sprintf(format, args...))
	}
	r.b = nil
}

func (r *CheckpointReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("truncated or overlong varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *CheckpointReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("truncated or overlong varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a length or element count: at most what the rest of the
// input can hold at minSize bytes an element, so that a corrupt count never
// sizes an allocation beyond the input.
func (r *CheckpointReader) count(minSize int) int {
	v := r.uvarint()
	if v > uint64(len(r.b)/max(minSize, 1)) || v > math.MaxInt32 {
		r.fail("count %d exceeds the %d bytes left", v, len(r.b))
		return 0
	}
	return int(v)
}

func (r *CheckpointReader) raw(n int) []byte {
	if n > len(r.b) {
		r.fail("truncated")
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *CheckpointReader) str() string { return string(r.raw(r.count(1))) }

func (r *CheckpointReader) bool() bool {
	p := r.raw(1)
	if p == nil {
		return false
	}
	if p[0] > 1 {
		r.fail("bad boolean %d", p[0])
	}
	return p[0] == 1
}

// section reads the next section's tag and a reader of its body; ok is
// false at the end of the input (or after an error).
func (r *CheckpointReader) section() (tag uint64, body *CheckpointReader, ok bool) {
	if r.err != nil || len(r.b) == 0 {
		return 0, nil, false
	}
	tag = r.uvarint()
	var n uint32
	if lb := r.raw(4); lb != nil {
		n = binary.LittleEndian.Uint32(lb)
	}
	p := r.raw(int(n))
	if r.err != nil {
		return 0, nil, false
	}
	return tag, &CheckpointReader{b: p}, true
}

// done reports the error of a section's body, which must have been read to
// its end.
func (r *CheckpointReader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d unread bytes at the end of a section", len(r.b))
	}
	return r.err
}

func checkpointError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCheckpoint, fmt.Sprintf(format, args...))
}

// checkpointLimit is the error of a checkpoint a count limit refuses: it
// wraps both ErrCheckpoint and the limit's error.
func checkpointLimit(limit error) error {
	return fmt.Errorf("%w: %w", ErrCheckpoint, limit)
}

// The primitives an owner's section of a checkpoint is written and read
// with (Job.AppendCheckpoint, DecodeCheckpoint).

// Varint writes v.
func (w *CheckpointWriter) Varint(v int64) { w.varint(v) }

// Uvarint writes v.
func (w *CheckpointWriter) Uvarint(v uint64) { w.uvarint(v) }

// Bool writes v.
func (w *CheckpointWriter) Bool(v bool) { w.bool(v) }

// Varint reads what CheckpointWriter.Varint wrote.
func (r *CheckpointReader) Varint() int64 { return r.varint() }

// Bool reads what CheckpointWriter.Bool wrote.
func (r *CheckpointReader) Bool() bool { return r.bool() }

// Count reads a count of items of at least minSize bytes each, refusing
// one that the rest of the section cannot hold.
func (r *CheckpointReader) Count(minSize int) int { return r.count(minSize) }

// Fail records the reader's first error, wrapping ErrCheckpoint.
func (r *CheckpointReader) Fail(format string, args ...any) { r.fail(format, args...) }

// Err is the reader's first error.
func (r *CheckpointReader) Err() error { return r.err }
