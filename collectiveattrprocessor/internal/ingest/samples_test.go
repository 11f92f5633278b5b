package ingest

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
			s.add(r, ts, 1, int64(step), 0, 64)
		case op < 6: // late arrival
			s.add(r, ts-int64(rng.IntN(20)), 1, int64(step), 0, 64)
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

// TestNearestIsTheClosestWithinTolerance checks nearestRow against its
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
			s.add(r, ts, v, 0, 0, 64)
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
			s.add(roleDeviceUsed, q, 1, 0, 0, 64) // samples are formed at a device-used row
			i, _ := s.find(q)
			j, ok := s.nearestRow(i, r, tol)
			var got int64
			if ok {
				got = s.rows[j].vals[r]
			}
			if got != want || ok != wantOK {
				t.Fatalf("trial %d: nearestRow(%d, tol %d) = %d, %v; want %d, %v", trial, q, tol, got, ok, want, wantOK)
			}
		}
	}
}

// TestJoinAccountsForEveryDeviceUsedPoint runs random batches through the
// join (mostly in order, some late points, every role sometimes missing,
// reserved points sometimes batches late or absent for several batches, a
// small row bound, pending expiry) and checks after every batch that the
// series' bookkeeping matches its rows and that every device-used point
// sent is accounted for: a sample, an unjoinable skip, or still pending.
func TestJoinAccountsForEveryDeviceUsedPoint(t *testing.T) {
	const t0 = int64(1767225600000000000)
	const step = int64(40 * time.Millisecond)
	rng := rand.New(rand.NewPCG(5, 6))
	c, clk := newTestConverter(Config{MaxPendingRows: 12, PendingTTL: 2 * time.Second})
	sent, samples, unjoinable, expired := 0, 0, 0, 0
	next := int64(0)
	usedTs := map[int64]bool{}
	delayed := map[int][]gaugePoint{} // reserved points sent a few batches late
	for batch := range 400 {
		pts := delayed[batch]
		delete(delayed, batch)
		for range rng.IntN(8) {
			ts := t0 + next*step
			next++
			if rng.IntN(6) == 0 { // late: up to 40 steps back
				ts -= int64(rng.IntN(40)) * step
			}
			if rng.IntN(4) != 0 && !usedTs[ts] {
				usedTs[ts] = true
				pts = append(pts, used(ts, 1000))
				sent++
			}
			outage := batch%50 >= 45 // the allocator exporter sends nothing
			switch rng.IntN(4) {
			case 0: // none
			case 1:
				later := batch + 1 + rng.IntN(3)
				delayed[later] = append(delayed[later], reserved(ts, 500))
			default:
				if !outage {
					pts = append(pts, reserved(ts+int64(rng.IntN(3)-1)*step, 500))
				}
			}
			if rng.IntN(2) == 0 {
				pts = append(pts, gaugePoint{name: "gpu.memory.device.free", ts: ts, value: 10})
			}
		}
		rng.Shuffle(len(pts), func(i, j int) { pts[i], pts[j] = pts[j], pts[i] })
		got := convertMetrics(t, c, gaugeBatch(rank0, pts...))
		samples += len(got.records)
		for _, s := range got.skips {
			if s.Reason == SkipDuplicate || s.Reason == SkipOrphaned {
				continue // partner points; device-used times are never repeated
			}
			require.Equal(t, SkipUnjoinable, s.Reason, "batch %d: %s", batch, s.Detail)
			unjoinable++
		}
		if batch%25 == 24 {
			clk.advance(3 * time.Second)
			expired += c.Expire()
		}
		for _, s := range c.metrics.series {
			var counts [numRoles]int32
			pendingUsed := 0
			for i, row := range s.rows {
				require.False(t, i > 0 && s.rows[i-1].tsNs >= row.tsNs, "batch %d: rows out of order", batch)
				for r := range numRoles {
					if row.has&(1<<r) != 0 {
						counts[r]++
					}
				}
				if row.has&(1<<roleDeviceUsed) != 0 {
					pendingUsed++
					require.GreaterOrEqual(t, i, s.firstPending, "batch %d: a pending row before firstPending", batch)
				}
			}
			require.Equal(t, counts, s.roleCount, "batch %d", batch)
			require.LessOrEqual(t, len(s.rows), 12, "batch %d", batch)
			require.Equal(t, sent, samples+unjoinable+expired+pendingUsed, "batch %d: device-used points lost", batch)
		}
	}
	require.Positive(t, samples)
	require.Positive(t, unjoinable)
}
