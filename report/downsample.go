package report

// Column is the samples of one pixel column: their least and greatest
// value, the value of the last one, and how many there were (0: no sample,
// the values mean nothing; -1: no sample, the previous value held, see
// holdGaps).
type Column struct {
	Min, Max, Last int64
	N              int32
}

// TimeScale maps event times to column positions: [StartNs, EndNs] onto
// [0, Columns]. Times are not negative (validated events), so t − start
// fits an int64; the product is taken in float64 so that no span overflows.
type TimeScale struct {
	StartNs, EndNs int64
	Columns        int
}

// X is the column position of t, in [0, Columns].
func (s TimeScale) X(t int64) float64 {
	span := s.EndNs - s.StartNs
	if span <= 0 {
		return 0
	}
	f := float64(uint64(t)-uint64(s.StartNs)) / float64(span)
	if t < s.StartNs {
		f = -float64(uint64(s.StartNs)-uint64(t)) / float64(span)
	}
	return min(max(f, 0), 1) * float64(s.Columns)
}

// Column is the column holding t, in [0, Columns).
func (s TimeScale) Column(t int64) int {
	return min(int(s.X(t)), s.Columns-1)
}

// Downsample reduces a series (times ascending) to one Column per pixel
// column of the scale, keeping each column's least and greatest value, so a
// spike of one sample shows at full height whatever the zoom-out.
func Downsample(times, values []int64, s TimeScale) []Column {
	cols := make([]Column, s.Columns)
	for i, t := range times {
		c := &cols[s.Column(t)]
		v := values[i]
		if c.N == 0 {
			c.Min, c.Max = v, v
		} else {
			c.Min, c.Max = min(c.Min, v), max(c.Max, v)
		}
		c.Last = v
		c.N++
	}
	return cols
}
