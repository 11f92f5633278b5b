package markers

import "cmp"

// Identify gives the markers of timed that have no identity (a source that
// times ops well but does not name them, such as an older profiler trace)
// the identity of a marker of identified (a source that names ops but
// times them loosely, such as Flight Recorder) of the same rank: the one of
// the same op (and communicator, when the timed marker names one) whose
// interval, widened by toleranceNs on each side, holds the timed marker's
// start, nearest by start. Each identified marker names at most one timed
// marker. An identified marker that names the same op as a timed marker
// with identity is that op seen twice, and used too. Identify returns the
// identified markers it did not use, in their order.
func Identify(timed, identified []Marker, toleranceNs int64) []Marker {
	used := make([]bool, len(identified))
	type key struct {
		rank     int64
		comm, op string
		seq      int64
	}
	named := map[key]bool{}
	for i := range timed {
		if t := &timed[i]; t.Identity() {
			named[key{t.Rank, t.CommID, t.Op, t.Seq}] = true
		}
	}
	for j := range identified {
		c := &identified[j]
		used[j] = c.Identity() && named[key{c.Rank, c.CommID, c.Op, c.Seq}]
	}
	for i := range timed {
		t := &timed[i]
		if t.Identity() {
			continue
		}
		best := -1
		for j := range identified {
			c := &identified[j]
			if used[j] || !c.Identity() || c.Rank != t.Rank || c.Op != t.Op || (t.CommID != "" && t.CommID != c.CommID) {
				continue
			}
			if t.StartNs < c.StartNs-toleranceNs || t.StartNs > c.EndNs+toleranceNs {
				continue
			}
			if best < 0 || cmp.Compare(absDiff(c.StartNs, t.StartNs), absDiff(identified[best].StartNs, t.StartNs)) < 0 {
				best = j
			}
		}
		if best < 0 {
			continue
		}
		used[best] = true
		c := &identified[best]
		t.CommID, t.Seq, t.HasSeq = c.CommID, c.Seq, true
		if t.NRanks == 0 {
			t.NRanks = c.NRanks
		}
		if t.Ranks == nil {
			t.Ranks = c.Ranks
		}
		if t.MessageBytes == 0 {
			t.MessageBytes = c.MessageBytes
		}
	}
	var rest []Marker
	for j := range identified {
		if !used[j] {
			rest = append(rest, identified[j])
		}
	}
	return rest
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}
