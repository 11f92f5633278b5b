package report

import (
	"math"
	"strconv"
	"testing"
)

func TestDownsampleKeepsExtremes(t *testing.T) {
	// 10 000 samples into 10 columns: one high spike and one low dip, each
	// a single sample, must set their columns' max and min.
	const n = 10_000
	times := make([]int64, n)
	values := make([]int64, n)
	for i := range times {
		times[i] = int64(i) * 1000
		values[i] = 500
	}
	values[1234] = 9_000 // column 1
	values[7777] = -40   // column 7
	s := TimeScale{StartNs: 0, EndNs: times[n-1], Columns: 10}
	cols := Downsample(times, values, s)
	for c, col := range cols {
		wantMin, wantMax := int64(500), int64(500)
		if c == 1 {
			wantMax = 9_000
		}
		if c == 7 {
			wantMin = -40
		}
		if col.Min != wantMin || col.Max != wantMax || col.N == 0 {
			t.Errorf("column %d = %+v, want min %d max %d", c, col, wantMin, wantMax)
		}
	}
	var total int32
	for _, col := range cols {
		total += col.N
	}
	if total != n {
		t.Errorf("columns hold %d samples, want %d", total, n)
	}
}

func TestTimeScaleColumn(t *testing.T) {
	tests := []struct {
		name string
		s    TimeScale
		t    int64
		want int
	}{
		{"start", TimeScale{100, 200, 10}, 100, 0},
		{"end is the last column", TimeScale{100, 200, 10}, 200, 9},
		{"middle", TimeScale{100, 200, 10}, 155, 5},
		{"before start clamps", TimeScale{100, 200, 10}, 0, 0},
		{"after end clamps", TimeScale{100, 200, 10}, 1 << 62, 9},
		{"empty span", TimeScale{100, 100, 10}, 100, 0},
		{"widest span", TimeScale{0, math.MaxInt64, 1000}, math.MaxInt64 / 4, 250},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Column(tt.t); got != tt.want {
				t.Errorf("Column(%d) = %d, want %d", tt.t, got, tt.want)
			}
		})
	}
}

func TestHoldGaps(t *testing.T) {
	// Samples in columns 0, 3 and 9: the 3-column gap is sampling, held at
	// column 0's last value; the 6-column gap is a pause, left empty.
	cols := make([]Column, 10)
	cols[0] = Column{Min: 1, Max: 5, Last: 2, N: 3}
	cols[3] = Column{Min: 7, Max: 7, Last: 7, N: 1}
	cols[9] = Column{Min: 4, Max: 4, Last: 4, N: 1}
	holdGaps(cols, 4)
	for c, col := range cols {
		switch {
		case c == 1 || c == 2:
			if col.N != -1 || col.Min != 2 || col.Max != 2 {
				t.Errorf("column %d = %+v, want column 0's last value held", c, col)
			}
		case c > 3 && c < 9:
			if col.N != 0 {
				t.Errorf("column %d = %+v, want empty", c, col)
			}
		}
	}
}

func TestMemoryPathsBreakAtGaps(t *testing.T) {
	g := newLaneGeometry(1, 0, 0, 100)
	cols := []Column{{0, 100, 100, 1}, {0, 0, 0, 1}, {}, {50, 50, 50, 1}}
	area, band := memoryPaths(cols, g)
	// Two runs, columns [0, 2) and [3, 4): two closed subpaths each.
	if got := countByte(area, 'M'); got != 2 {
		t.Errorf("area %q has %d subpaths, want 2", area, got)
	}
	if got := countByte(band, 'M'); got != 2 {
		t.Errorf("band %q has %d subpaths, want 2", band, got)
	}
	// The first column's maximum is the top of the plot.
	want := "M0 " + strconv.Itoa(g.Top)
	if string(band[:len(want)]) != want {
		t.Errorf("band %q does not start at %q", band, want)
	}
}

func countByte(b []byte, c byte) int {
	n := 0
	for _, x := range b {
		if x == c {
			n++
		}
	}
	return n
}
