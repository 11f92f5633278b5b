package evidence

import (
	"cmp"
	"math"
	"slices"
)

// Clock skew between hosts as a function of time (evidence-mode §7.5).
//
// A change matched to a marker with its collective's identity is judged at
// each member's own marker, on that member's clock: skew cancels. A change
// matched to a bare marker is judged by the other ranks' rises within
// synchrony_window_ns of wall clock, where each host's clock error (an
// offset plus tens of ppm of drift) counts. Where some of the job's
// markers carry an identity, the members of each such collective complete
// it at one physical instant (a collective ends on every member once the
// last one joined), so the spread of their markers' ends measures their
// clocks' differences at that moment. Per host (the ranks of a known
// host share its clock; a rank of none is its own), the median of those
// differences per skewBucketNs of its time, joined linearly from one
// bucket to the next (flat beyond the first and last), estimates its
// clock's offset from the job's common time as a function of time; wall
// clock synchrony compares rises on that common time.

const (
	// skewBucketNs is the span of one knot: drift of 100 ppm moves a clock
	// by 3 ms in it, under any synchrony window.
	skewBucketNs = 30_000_000_000
	// skewMinPoints is the fewest collectives of a rank in a bucket that
	// make a knot: a median of fewer is one marker's jitter.
	skewMinPoints = 3
	// skewPasses refines the common time: each pass takes every
	// collective's median on the clocks corrected by the previous pass, so
	// that communicators of a few hosts (pipeline pairs) agree with the
	// world's.
	skewPasses = 3
)

// clockSkew is each rank's clock offset from the job's common time.
type clockSkew struct {
	// knots holds, by rank index, (time on the rank's clock, offset) in
	// time order, shared by the ranks of a host; none: offset 0.
	knots [][]skewKnot
}

type skewKnot struct{ t, offset int64 }

// offset is rank ri's clock offset at t (its own clock).
func (s *clockSkew) offset(ri int32, t int64) int64 {
	if s == nil || int(ri) >= len(s.knots) {
		return 0
	}
	k := s.knots[ri]
	switch {
	case len(k) == 0:
		return 0
	case t <= k[0].t:
		return k[0].offset
	case t >= k[len(k)-1].t:
		return k[len(k)-1].offset
	}
	i, _ := slices.BinarySearchFunc(k, t, func(x skewKnot, t int64) int { return cmp.Compare(x.t, t) })
	a, b := k[i-1], k[i]
	f := float64(t-a.t) / float64(b.t-a.t)
	return a.offset + int64(math.Round(f*float64(b.offset-a.offset)))
}

// common is time t of rank ri's clock on the job's common time.
func (s *clockSkew) common(ri int32, t int64) int64 { return satSub(t, s.offset(ri, t)) }

// skewPoint is one collective's measure of a rank's clock: at t (the
// rank's marker end) the rank was offset ahead of the collective's median.
type skewPoint struct{ t, offset int64 }

// estimateSkew estimates each rank's clock offset from the collectives
// whose markers carry an identity on two ranks or more (members, as the
// matcher lists them); nil when none does.
func estimateSkew(in *Input, members [][]memberRef) *clockSkew {
	type obs struct {
		ri int32
		t  int64
	}
	var colls [][]obs
	for c := range members {
		if len(members[c]) < 2 {
			continue
		}
		var o []obs
		for _, m := range members[c] {
			mk := &in.Ranks[m.rank].Markers[m.marker]
			if mk.Approximate {
				continue
			}
			o = append(o, obs{m.rank, mk.EndNs})
		}
		if len(o) >= 2 {
			colls = append(colls, o)
		}
	}
	if len(colls) == 0 {
		return nil
	}
	clock := hostClocks(in)
	s := &clockSkew{knots: make([][]skewKnot, len(in.Ranks))}
	points := make([][]skewPoint, len(in.Ranks))
	var times []int64
	for range skewPasses {
		for c := range points {
			points[c] = points[c][:0]
		}
		for _, o := range colls {
			times = times[:0]
			for _, x := range o {
				times = append(times, s.common(x.ri, x.t))
			}
			med := medianOf(times)
			for _, x := range o {
				c := clock[x.ri]
				points[c] = append(points[c], skewPoint{x.t, satSub(x.t, med)})
			}
		}
		next := make([][]skewKnot, len(in.Ranks))
		for c, p := range points {
			if len(p) > 0 {
				next[c] = skewKnots(p)
			}
		}
		for ri, c := range clock {
			s.knots[ri] = next[c]
		}
	}
	return s
}

// hostClocks numbers the ranks' clocks: ranks of one known host share its
// clock (the index of its first rank); a rank of no known host has its own.
func hostClocks(in *Input) []int32 {
	clock := make([]int32, len(in.Ranks))
	first := map[string]int32{}
	for ri := range in.Ranks {
		h := in.Ranks[ri].Host
		clock[ri] = int32(ri)
		if h == "" || h == "unknown" {
			continue
		}
		if c, ok := first[h]; ok {
			clock[ri] = c
		} else {
			first[h] = int32(ri)
		}
	}
	return clock
}

// skewKnots are the knots of one clock's points: per bucket of its time
// with skewMinPoints or more, the median time and the median offset.
func skewKnots(p []skewPoint) []skewKnot {
	slices.SortFunc(p, func(a, b skewPoint) int { return cmp.Compare(a.t, b.t) })
	var out []skewKnot
	ts := make([]int64, 0, 64)
	offs := make([]int64, 0, 64)
	for i := 0; i < len(p); {
		end := i
		bucket := floorDiv(p[i].t, skewBucketNs)
		for end < len(p) && floorDiv(p[end].t, skewBucketNs) == bucket {
			end++
		}
		if end-i >= skewMinPoints {
			ts, offs = ts[:0], offs[:0]
			for _, x := range p[i:end] {
				ts = append(ts, x.t)
				offs = append(offs, x.offset)
			}
			out = append(out, skewKnot{medianOf(ts), medianOf(offs)})
		}
		i = end
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
