package output

import (
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// IDSource makes trace and span ids for result spans. Tests inject a
// deterministic one.
type IDSource interface {
	TraceID() pcommon.TraceID
	SpanID() pcommon.SpanID
}

// NewRandomIDSource returns an IDSource of random, never all-zero ids. It is
// safe for concurrent use (math/rand/v2's global generator).
func NewRandomIDSource() IDSource { return randomIDs{} }

type randomIDs struct{}

func (randomIDs) TraceID() pcommon.TraceID {
	var id pcommon.TraceID
	for id.IsEmpty() {
		binary.LittleEndian.PutUint64(id[:8], rand.Uint64())
		binary.LittleEndian.PutUint64(id[8:], rand.Uint64())
	}
	return id
}

func (randomIDs) SpanID() pcommon.SpanID {
	var id pcommon.SpanID
	for id.IsEmpty() {
		binary.LittleEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}
