package ingest

import (
	"encoding/hex"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

const (
	// scopeIDLen is the length of a span id in hex.
	scopeIDLen = 2 * len(pcommon.SpanID{})
	// scopeIDChunk is the size of the blocks scope ids are cut from: 64 ids.
	scopeIDChunk = 64 * scopeIDLen
)

// scopeIDs hands out span ids in hex, the ScopeID of a phase span, as
// strings cut from shared blocks. Every phase span needs its own, kept for
// the whole window: allocated one by one they were the largest cost of a
// phase span, in the allocation and in the garbage collector's marking of
// tens of thousands of 16-byte objects. A block's bytes are written once,
// before any string refers to them, and never again, which is what
// unsafe.String requires. A block lives while any of its 64 ids does; ids
// leave the buffers in about the order they came, so few blocks outlive
// most of their ids.
type scopeIDs struct {
	block []byte
}

func (s *scopeIDs) of(id pcommon.SpanID) string {
	if cap(s.block)-len(s.block) < scopeIDLen {
		s.block = make([]byte, 0, scopeIDChunk)
	}
	off := len(s.block)
	s.block = hex.AppendEncode(s.block, id[:])
	return unsafe.String(&s.block[off], scopeIDLen)
}
