package report

import (
	"slices"
	"strconv"
)

// laneGeometry places a lane's parts vertically (pixels from the lane top):
// phase rows on top, the memory plot between Top and Bottom, marker ticks
// below it.
type laneGeometry struct {
	Height      int
	PhaseRows   int
	Top, Bottom int
	Lo, Hi      int64 // hidden-memory range of the shared y scale
}

const (
	phaseRowHeight = 4
	markerHeight   = 5
)

func newLaneGeometry(ranks int, phaseRows int, lo, hi int64) laneGeometry {
	h := 22
	switch {
	case ranks <= 16:
		h = 56
	case ranks <= 64:
		h = 40
	case ranks <= 256:
		h = 28
	}
	g := laneGeometry{PhaseRows: phaseRows, Lo: lo, Hi: max(hi, lo+1)}
	g.Top = 2 + phaseRows*phaseRowHeight
	g.Height = h + phaseRows*phaseRowHeight
	g.Bottom = g.Height - markerHeight - 1
	return g
}

// y is the pixel row of a hidden-memory value.
func (g laneGeometry) y(v int64) int {
	f := float64(v-g.Lo) / float64(g.Hi-g.Lo)
	return g.Bottom - int(f*float64(g.Bottom-g.Top)+0.5)
}

// holdGaps fills the empty columns between two sampled columns with the
// earlier column's last value when the samples are at most maxGapCols
// columns apart (samples sparser than pixels), and leaves longer gaps empty
// (a rank that stopped reporting).
func holdGaps(cols []Column, maxGapCols int) {
	prev := -1
	for c := range cols {
		if cols[c].N <= 0 {
			continue
		}
		if prev >= 0 && c-prev > 1 && c-prev <= maxGapCols {
			v := cols[prev].Last
			for k := prev + 1; k < c; k++ {
				cols[k] = Column{Min: v, Max: v, Last: v, N: -1}
			}
		}
		prev = c
	}
}

// memoryPaths returns the SVG path data of a lane's series: area is the
// region under the per-column maximum, band the min–max envelope. Runs of
// columns with the same pixel row become one segment.
func memoryPaths(cols []Column, g laneGeometry) (area, band []byte) {
	for a := 0; a < len(cols); {
		if cols[a].N == 0 {
			a++
			continue
		}
		b := a
		for b < len(cols) && cols[b].N != 0 {
			b++
		}
		top := stepPath(nil, cols, a, b, func(c Column) int { return g.y(c.Max) })
		area = append(area, top...)
		area = append(area, 'V')
		area = strconv.AppendInt(area, int64(g.Bottom), 10)
		area = append(area, 'H')
		area = strconv.AppendInt(area, int64(a), 10)
		area = append(area, 'Z')

		band = append(band, top...)
		bottom := stepBack(cols, a, b, func(c Column) int { return g.y(c.Min) })
		band = append(band, bottom...)
		band = append(band, 'Z')
		a = b
	}
	return area, band
}

// stepPath draws columns [a, b) left to right as horizontal steps.
func stepPath(dst []byte, cols []Column, a, b int, y func(Column) int) []byte {
	dst = append(dst, 'M')
	dst = strconv.AppendInt(dst, int64(a), 10)
	dst = append(dst, ' ')
	cur := y(cols[a])
	dst = strconv.AppendInt(dst, int64(cur), 10)
	for c := a + 1; c < b; c++ {
		if v := y(cols[c]); v != cur {
			dst = append(dst, 'H')
			dst = strconv.AppendInt(dst, int64(c), 10)
			dst = append(dst, 'V')
			dst = strconv.AppendInt(dst, int64(v), 10)
			cur = v
		}
	}
	dst = append(dst, 'H')
	return strconv.AppendInt(dst, int64(b), 10)
}

// stepBack continues a path at column b's left edge back to column a along
// y, right to left.
func stepBack(cols []Column, a, b int, y func(Column) int) []byte {
	var dst []byte
	cur := y(cols[b-1])
	dst = append(dst, 'V')
	dst = strconv.AppendInt(dst, int64(cur), 10)
	for c := b - 2; c >= a; c-- {
		if v := y(cols[c]); v != cur {
			dst = append(dst, 'H')
			dst = strconv.AppendInt(dst, int64(c+1), 10)
			dst = append(dst, 'V')
			dst = strconv.AppendInt(dst, int64(v), 10)
			cur = v
		}
	}
	dst = append(dst, 'H')
	return strconv.AppendInt(dst, int64(a), 10)
}

// tickPath draws one vertical tick per distinct column.
func tickPath(columns []int, y0, h int) []byte {
	slices.Sort(columns)
	columns = slices.Compact(columns)
	var dst []byte
	for _, c := range columns {
		dst = append(dst, 'M')
		dst = strconv.AppendInt(dst, int64(c), 10)
		dst = append(dst, ".5 "...)
		dst = strconv.AppendInt(dst, int64(y0), 10)
		dst = append(dst, 'v')
		dst = strconv.AppendInt(dst, int64(h), 10)
	}
	return dst
}

// spanPath draws column ranges [x0, x1) as bars of height h at row y,
// merging ranges that touch.
func spanPath(ranges [][2]int, y, h int) []byte {
	slices.SortFunc(ranges, func(a, b [2]int) int { return a[0] - b[0] })
	var dst []byte
	for i := 0; i < len(ranges); {
		x0, x1 := ranges[i][0], ranges[i][1]
		j := i + 1
		for j < len(ranges) && ranges[j][0] <= x1 {
			x1 = max(x1, ranges[j][1])
			j++
		}
		dst = append(dst, 'M')
		dst = strconv.AppendInt(dst, int64(x0), 10)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(y), 10)
		dst = append(dst, 'h')
		dst = strconv.AppendInt(dst, int64(x1-x0), 10)
		dst = append(dst, 'v')
		dst = strconv.AppendInt(dst, int64(h), 10)
		dst = append(dst, 'h')
		dst = strconv.AppendInt(dst, int64(x0-x1), 10)
		dst = append(dst, 'z')
		i = j
	}
	return dst
}
