package window

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
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
		rb := &Rank{markers: markerColumns{refFront: start}}
		type want struct {
			ts  int64
			ref SpanRef
		}
		var model []want
		ts, span := int64(0), byte(0)
		for range 5000 {
			switch {
			case rng.IntN(3) == 0 && len(model) > 0:
				rb.markers.popFront()
				model = model[1:]
			case rng.IntN(4) == 0:
				ts++
				rb.markers.pushRef(ts, SpanRef{}, 0, maxCap)
				model = append(model, want{ts: ts})
			default:
				span++
				ref := SpanRef{TraceID: [16]byte{span, 1}, SpanID: [8]byte{span}}
				for range 1 + rng.IntN(3) {
					ts++
					rb.markers.pushRef(ts, ref, 0, maxCap)
					model = append(model, want{ts: ts, ref: ref})
				}
			}
			for len(model) > maxCap {
				rb.markers.popFront()
				model = model[1:]
			}
			require.Equal(t, len(model), rb.markers.len())
			withRef := 0
			for i, w := range model {
				require.Equal(t, w.ts, rb.markers.at(i))
				ref, ok := rb.markers.ref(i)
				require.Equal(t, w.ref != SpanRef{}, ok)
				require.Equal(t, w.ref, ref)
				if ok {
					withRef++
				}
			}
			require.LessOrEqual(t, rb.markers.spanRefs.len(), withRef+1)
		}
	}
}

// TestTrimDropsWhatAScanWould pushes samples and markers (some with spans)
// mostly in time order, sometimes out of it, trims at random cutoffs, and
// checks after every trim that the rings hold what dropping their front
// entries older than the cutoff one by one leaves (the binary search is
// used only while a ring is in order) and that every marker still resolves
// to its own span.
func TestTrimDropsWhatAScanWould(t *testing.T) {
	const maxCap = 256
	rng := rand.New(rand.NewPCG(3, 4))
	rb := &Rank{}
	type marker struct {
		ts  int64
		ref SpanRef
	}
	var samples []int64
	var markers []marker
	ts, span := int64(1000), byte(0)
	disordered := 0
	for step := range 20000 {
		switch rng.IntN(10) {
		case 0, 1, 2, 3:
			ts += int64(rng.IntN(5))
			at := ts
			if rng.IntN(50) == 0 {
				at -= int64(rng.IntN(40)) // late
			}
			rb.samples.push(at, 0, 0, 0, maxCap)
			rb.frontNs = min(rb.frontNs, at) // as the store keeps it
			samples = append(samples, at)
		case 4, 5, 6, 7:
			ts += int64(rng.IntN(5))
			var ref SpanRef
			if rng.IntN(4) != 0 {
				span++
				ref = SpanRef{SpanID: [8]byte{span, byte(step)}}
			}
			at := ts
			if rng.IntN(50) == 0 {
				at -= int64(rng.IntN(40))
			}
			for range 1 + rng.IntN(2) {
				rb.markers.pushRef(at, ref, 0, maxCap)
				markers = append(markers, marker{at, ref})
			}
			rb.frontNs = min(rb.frontNs, at)
		default:
			cutoff := ts - int64(rng.IntN(60))
			if rb.samples.disordered || rb.markers.disordered {
				disordered++
			}
			dropped := rb.trim(cutoff)
			want := 0
			for len(samples) > 0 && samples[0] < cutoff {
				samples, want = samples[1:], want+1
			}
			for len(markers) > 0 && markers[0].ts < cutoff {
				markers, want = markers[1:], want+1
			}
			require.Equal(t, want, dropped, "step %d", step)
		}
		for len(samples) > maxCap {
			rb.samples.dropFront(1)
			samples = samples[1:]
		}
		for len(markers) > maxCap {
			rb.markers.popFront()
			markers = markers[1:]
		}
		require.Equal(t, len(samples), rb.samples.len(), "step %d", step)
		for i, want := range samples {
			require.Equal(t, want, rb.samples.at(i), "step %d", step)
		}
		require.Equal(t, len(markers), rb.markers.len(), "step %d", step)
		for i, want := range markers {
			ref, _ := rb.markers.ref(i)
			require.Equal(t, want, marker{rb.markers.at(i), ref}, "step %d marker %d", step, i)
		}
	}
	t.Logf("%d trims of rings out of order", disordered)
	require.Positive(t, disordered, "trims of rings out of order")
	require.Less(t, disordered, 4000, "trims of rings in order")
}

// TestRingGrowsInOrderAndNotFarPastItsLength: a ring filled while its front
// is popped now and then (so that growth copies a wrapped ring) keeps its
// elements in order, never holds more than its bound, and from
// quarterGrowthFrom elements on holds at most a quarter more storage than it
// ever held elements.
func TestRingGrowsInOrderAndNotFarPastItsLength(t *testing.T) {
	const maxCap = 50_000
	var r ring[int]
	next, front, most := 0, 0, 0
	for next < 200_000 {
		if r.len() == maxCap {
			r.popFront()
			front++
		}
		r.push(next, maxCap)
		next++
		if next%7 == 0 {
			r.popFront()
			front++
		}
		most = max(most, r.len())
		require.LessOrEqual(t, len(r.buf), maxCap)
		if most >= quarterGrowthFrom {
			require.LessOrEqual(t, len(r.buf), most+most/4+1, "after %d pushes", next)
		}
	}
	for i := range r.len() {
		require.Equal(t, front+i, *r.at(i))
	}
}

// TestJobRanksByIndex: a rank is found whether it is held by index or only
// in the map, and the index grows only while the ranks are dense.
func TestJobRanksByIndex(t *testing.T) {
	job := &Job{ranks: map[int64]*Rank{}}
	added := map[int64]*Rank{}
	add := func(r int64) {
		rb := &Rank{}
		job.addRank(r, rb)
		added[r] = rb
	}
	for r := range int64(100) {
		add(99 - r) // 99 to 88 come too early for the index
	}
	require.Len(t, job.byRank, 88)
	add(-3)
	add(1 << 40)
	add(100_000)
	require.Len(t, job.byRank, 88, "scattered ranks stay in the map")
	add(250) // below 2 × 104 tracked + 64: the index takes 88 to 99 over
	require.Len(t, job.byRank, 251)
	for r := range 100 {
		require.NotNil(t, job.byRank[r], "rank %d", r)
	}
	for _, r := range []int64{-3, 0, 1, 50, 88, 99, 100, 249, 250, 251, 100_000, 1 << 40, math.MaxInt64, math.MinInt64} {
		require.Same(t, added[r], job.Rank(r), "rank %d", r)
	}
	require.Len(t, job.ranks, len(added))
}
