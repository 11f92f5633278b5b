package ingest

import (
	"encoding/hex"
	"strings"

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
// tens of thousands of 16-byte objects. A block is a strings.Builder's
// buffer: the builder only appends to it, so the strings cut from it keep
// their bytes. A block lives while any of its 64 ids does; ids leave the
// buffers in about the order they came, so few blocks outlive most of
// their ids.
type scopeIDs struct {
	block strings.Builder
}

func (s *scopeIDs) of(id pcommon.SpanID) string {
	if s.block.Cap()-s.block.Len() < scopeIDLen {
		s.block.Reset()
		s.block.Grow(scopeIDChunk)
	}
	var text [scopeIDLen]byte
	hex.Encode(text[:], id[:])
	s.block.Write(text[:])
	all := s.block.String()
	return all[len(all)-scopeIDLen:]
}
