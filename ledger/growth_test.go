package ledger

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGrowthDetector(t *testing.T) {
	// 90 s at 10 Hz of unexplained memory given per time (seconds).
	series := func(f func(s float64) int64) []Row {
		var rows []Row
		for i := range 900 {
			rows = append(rows, Row{TimestampNs: int64(i) * 100 * ms, UnexplainedBytes: f(float64(i) / 10)})
		}
		return rows
	}
	tests := []struct {
		name string
		rows []Row
		ok   bool
		from int64
		to   int64
	}{
		{"flat", series(func(float64) int64 { return 0 }), false, 0, 0},
		{"leak of 8 MiB/s", series(func(s float64) int64 { return int64(s) * 8 * mib }), true, 37 * 8 * mib, 82 * 8 * mib},
		{"too slow", series(func(s float64) int64 { return int64(s) * 2 * mib }), false, 0, 0},
		{"workspace kept from 60 s", series(func(s float64) int64 {
			if s >= 60 {
				return gib
			}
			return 0
		}), true, 0, gib},
		{"spikes every 5 s", series(func(s float64) int64 {
			if int(s)%5 == 0 {
				return 2 * gib
			}
			return 0
		}), false, 0, 0},
		{"rise then fall", series(func(s float64) int64 {
			if s >= 50 && s < 80 {
				return gib
			}
			return 0
		}), false, 0, 0},
		{"too short", series(func(s float64) int64 { return int64(s) * 8 * mib })[:500], false, 0, 0},
	}
	var g GrowthDetector
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.rows {
				g.Add(&tc.rows[i])
			}
			got, ok := g.Detect()
			assert.Equal(t, tc.ok, ok)
			if ok {
				assert.Equal(t, Growth{StartNs: 299 * 100 * ms, EndNs: 899 * 100 * ms, FromBytes: tc.from, ToBytes: tc.to}, got)
			}
		})
	}
}
