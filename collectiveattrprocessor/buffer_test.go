package collectiveattrprocessor

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
)

// TestMarkerSpanRefsFollowTheMarkers pushes and pops markers at random, a
// span's markers together and stormlog markers (no span) in between, and
// checks after every step that each buffered marker still resolves to its
// own span and that the span table holds no more than one span per marker
// plus the last one to leave. Sequence numbers start just below their wrap.
func TestMarkerSpanRefsFollowTheMarkers(t *testing.T) {
	const maxCap = 64
	for _, start := range []uint32{0, markerSeq - 3, ^uint32(0) - 3} {
		rng := rand.New(rand.NewPCG(1, uint64(start)))
		rb := &rankBuffer{refFront: start}
		type want struct {
			ts  int64
			ref ingest.SpanRef
		}
		var model []want
		ts, span := int64(0), byte(0)
		for range 5000 {
			switch {
			case rng.IntN(3) == 0 && len(model) > 0:
				rb.popMarker()
				model = model[1:]
			case rng.IntN(4) == 0:
				ts++
				rb.pushMarker(ts, ingest.SpanRef{}, 0, maxCap)
				model = append(model, want{ts: ts})
			default:
				span++
				ref := ingest.SpanRef{TraceID: [16]byte{span, 1}, SpanID: [8]byte{span}}
				for range 1 + rng.IntN(3) {
					ts++
					rb.pushMarker(ts, ref, 0, maxCap)
					model = append(model, want{ts: ts, ref: ref})
				}
			}
			for len(model) > maxCap {
				rb.popMarker()
				model = model[1:]
			}
			require.Equal(t, len(model), rb.markers.len())
			withRef := 0
			for i, w := range model {
				m := rb.markers.at(i)
				require.Equal(t, w.ts, m.TimestampNs)
				ref, ok := rb.markerRef(m)
				require.Equal(t, w.ref != ingest.SpanRef{}, ok)
				require.Equal(t, w.ref, ref)
				if ok {
					withRef++
				}
			}
			require.LessOrEqual(t, rb.spanRefs.len(), withRef+1)
		}
	}
}
