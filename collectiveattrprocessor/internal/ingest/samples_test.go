package ingest

import (
	"math/rand/v2"
	"sort"
	"testing"
)

// TestLowerBoundWhateverTheCursor checks the cursor-started search against
// a plain binary search while the buffer grows, sheds its oldest quarter
// and is expired, and the queries go forward, backward and repeat: the
// cursor may be stale in every way but the answer must stay exact.
func TestLowerBoundWhateverTheCursor(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := &series{}
	const r = roleAllocatorReserved
	ts := int64(0)
	for step := range 20000 {
		switch op := rng.IntN(10); {
		case op < 5: // in-order arrival, sometimes a duplicate time
			ts += int64(rng.IntN(3))
			s.add(r, point{tsNs: ts, arrivalNs: int64(step)}, 64)
		case op < 6: // late arrival
			s.add(r, point{tsNs: ts - int64(rng.IntN(20)), arrivalNs: int64(step)}, 64)
		case op < 7 && step%50 == 0:
			s.expire(int64(step - rng.IntN(100)))
		}
		buf := s.pts[r]
		var q int64
		switch rng.IntN(3) {
		case 0:
			q = ts - int64(rng.IntN(5)) // just behind the newest: the usual case
		case 1:
			q = ts - int64(rng.IntN(200)) // far back
		default:
			q = ts + int64(rng.IntN(3)) - 1
		}
		want := sort.Search(len(buf), func(i int) bool { return buf[i].tsNs >= q })
		if got := s.lowerBound(r, q); got != want {
			t.Fatalf("step %d: lowerBound(%d) = %d, want %d (len %d)", step, q, got, want, len(buf))
		}
	}
}

// TestNearestIsTheClosestWithinTolerance checks nearest against its
// definition, a scan of the whole buffer: the closest point within tol,
// the earlier on a tie, the first buffered among points of one time.
func TestNearestIsTheClosestWithinTolerance(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const r = roleDeviceFree
	for trial := range 200 {
		s := &series{}
		ts := int64(0)
		for i := range 40 {
			ts += int64(rng.IntN(4)) // duplicates and gaps
			s.add(r, point{tsNs: ts, bytes: int64(trial*1000 + i)}, 64)
		}
		tol := int64(rng.IntN(4))
		for range 60 {
			q := int64(rng.IntN(int(ts) + 6))
			want, wantOK, bestD := int64(0), false, int64(0)
			for _, p := range s.pts[r] {
				d := max(p.tsNs-q, q-p.tsNs)
				if d <= tol && (!wantOK || d < bestD) {
					want, wantOK, bestD = p.bytes, true, d
				}
			}
			got, ok := s.nearest(r, q, tol)
			if got != want || ok != wantOK {
				t.Fatalf("trial %d: nearest(%d, tol %d) = %d, %v; want %d, %v", trial, q, tol, got, ok, want, wantOK)
			}
		}
	}
}
