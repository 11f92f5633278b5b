package ingest

import (
	"math/rand/v2"
	"testing"
)

// refPoint is a point of the naive model the join buffer is checked against.
type refPoint struct{ ts, v int64 }

// TestRowsStayExactWhateverTheCursor adds points in order, late, resent and
// for several roles while the series sheds its oldest quarter and expires
// rows, and checks after each step that the rows are sorted, one per time,
// that find agrees with a scan whatever the cursor, and that the role
// counts match the rows.
func TestRowsStayExactWhateverTheCursor(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := &series{}
	ts := int64(0)
	for step := range 20000 {
		r := role(rng.IntN(int(numRoles)))
		switch op := rng.IntN(10); {
		case op < 5: // in-order arrival, sometimes a duplicate time
			ts += int64(rng.IntN(3))
			s.add(r, ts, 1, int64(step), 64)
		case op < 6: // late arrival
			s.add(r, ts-int64(rng.IntN(20)), 1, int64(step), 64)
		case op < 7 && step%50 == 0:
			s.expire(int64(step - rng.IntN(100)))
		}
		var counts [numRoles]int32
		for i, row := range s.rows {
			if i > 0 && s.rows[i-1].tsNs >= row.tsNs {
				t.Fatalf("step %d: rows %d and %d out of order", step, i-1, i)
			}
			for r := range numRoles {
				if row.has&(1<<r) != 0 {
					counts[r]++
				}
			}
		}
		if counts != s.roleCount {
			t.Fatalf("step %d: role counts %v, rows hold %v", step, s.roleCount, counts)
		}
		if len(s.rows) > 64 {
			t.Fatalf("step %d: %d rows, bound 64", step, len(s.rows))
		}
		q := ts - int64(rng.IntN(40)) + 1
		want, wantFound := len(s.rows), false
		for i, row := range s.rows {
			if row.tsNs >= q {
				want, wantFound = i, row.tsNs == q
				break
			}
		}
		s.cursor = rng.IntN(len(s.rows)+3) - 2
		if got, found := s.find(q); got != want || found != wantFound {
			t.Fatalf("step %d: find(%d) = %d, %v; want %d, %v", step, q, got, found, want, wantFound)
		}
	}
}

// TestNearestIsTheClosestWithinTolerance checks nearest against its
// definition, a scan of every point buffered: the closest point within tol,
// the earlier on a tie, the first buffered among points of one time.
func TestNearestIsTheClosestWithinTolerance(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const r = roleDeviceFree
	for trial := range 200 {
		s := &series{}
		var ref []refPoint
		ts := int64(0)
		for i := range 40 {
			ts += int64(rng.IntN(4)) // duplicates and gaps
			v := int64(trial*1000 + i)
			s.add(r, ts, v, 0, 64)
			ref = append(ref, refPoint{ts, v})
		}
		tol := int64(rng.IntN(4))
		for range 60 {
			q := int64(rng.IntN(int(ts) + 6))
			want, wantOK, bestD := int64(0), false, int64(0)
			for _, p := range ref {
				d := max(p.ts-q, q-p.ts)
				// ref is in time order, duplicates in arrival order: the
				// first point at the least distance is the answer.
				if d <= tol && (!wantOK || d < bestD) {
					want, wantOK, bestD = p.v, true, d
				}
			}
			s.add(roleDeviceUsed, q, 1, 0, 64) // samples are formed at a device-used row
			i, _ := s.find(q)
			got, ok := s.nearest(i, r, tol)
			if got != want || ok != wantOK {
				t.Fatalf("trial %d: nearest(%d, tol %d) = %d, %v; want %d, %v", trial, q, tol, got, ok, want, wantOK)
			}
		}
	}
}
