package evidence

import (
	"slices"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// driftingHosts are four hosts' clocks: an offset (a last NTP sync long
// ago) and a drift in ppm; host 0 is the reference.
var driftingHosts = []struct {
	offset int64
	ppm    float64
}{{0, 0}, {420 * ms, 95}, {-310 * ms, -90}, {650 * ms, 60}}

// onDriftingClocks moves every time of rank r (on host r/2) by its host's
// clock error at that time.
func onDriftingClocks(in *Input) {
	at := func(r int, t int64) int64 {
		h := driftingHosts[r/2]
		return t + h.offset + int64(h.ppm*1e-6*float64(t-t0))
	}
	for r := range in.Ranks {
		rd := &in.Ranks[r]
		for i, t := range rd.Samples.TimesNs {
			rd.Samples.TimesNs[i] = at(r, t)
		}
		for i := range rd.Markers {
			rd.Markers[i].StartNs, rd.Markers[i].EndNs = at(r, rd.Markers[i].StartNs), at(r, rd.Markers[i].EndNs)
		}
	}
	in.TraceStartNs = slices.Min([]int64{at(0, t0), at(2, t0), at(4, t0), at(6, t0)})
}

// driftJob is a 30-minute job of 8 ranks on 4 hosts whose clocks drift
// apart by up to 0.96 s plus 0.33 s of drift, sampled every 100 ms: each 1 s step an all_gather
// on the world (with its identity when identified) and DDP's gradient
// all_reduce, a bare marker (a timestamp: the reducer's, which no Python
// wrapper sees); every 60 s a spike on every rank at the all_reduce, and
// between them a spike on one rank at it. It returns the job and the true
// times of both kinds of spike.
func driftJob(identified bool) (in *Input, world, single []int64) {
	const steps = 1800
	j := newSim(8, 100*ms, steps*sec)
	all := rankList(0, 8)
	for k := range int64(steps) {
		if identified {
			j.collective("world", k, "all_gather", all, k*sec+100*ms, 30*ms, false)
		} else {
			for _, r := range all {
				j.markers[r] = append(j.markers[r], Marker{StartNs: k*sec + 100*ms, EndNs: k*sec + 130*ms, Collective: NoCollective})
			}
		}
		for _, r := range all {
			j.markers[r] = append(j.markers[r], Marker{StartNs: k*sec + 600*ms, EndNs: k*sec + 600*ms, Collective: NoCollective})
		}
		switch k % 60 {
		case 20:
			j.change(all, k*sec+605*ms, k*sec+920*ms, 2*gib)
			world = append(world, k*sec+605*ms)
		case 50:
			j.change([]int{int(k/60) % 8}, k*sec+605*ms, k*sec+920*ms, 2*gib)
			single = append(single, k*sec+605*ms)
		}
	}
	in = j.input()
	onDriftingClocks(in)
	return in, world, single
}

// TestSkewEstimateAlignsBareMarkers: a spike on every rank at a bare
// marker is judged by the world's rises within synchrony_window_ns; hosts
// whose clocks drift apart by more than the window show no synchrony on
// wall clock. With an identity on some markers (the all_gathers) each
// rank's skew is estimated as a function of time (evidence-mode §7.5):
// every world spike is then synchronized on every rank, at the start of
// the job and 30 minutes on, while a one-rank spike stays one rank's.
func TestSkewEstimateAlignsBareMarkers(t *testing.T) {
	cfg := mediumConfig(t)
	synchronized := func(in *Input, at []int64, ranks func(i int) []int, mustFind bool) (yes, no int) {
		results := Attribute(in, cfg, nil)
		for i, tt := range at {
			for _, r := range ranks(i) {
				h := driftingHosts[r/2]
				local := t0 + tt + h.offset + int64(h.ppm*1e-6*float64(tt))
				found := false
				for _, res := range results {
					if res.Rank == int64(r) && res.IntervalStartNs <= local && uint64(local) <= res.IntervalEndNs {
						found = true
						if hasCode(res, ReasonWorldSynchrony) && res.Classification == attribution.CollectiveLikely {
							yes++
						} else {
							no++
						}
					}
				}
				if !found && mustFind {
					t.Errorf("rank %d: no result at %d s", r, tt/sec)
				}
			}
		}
		return yes, no
	}
	everyRank := func(int) []int { return rankList(0, 8) }

	bare, world, single := driftJob(false)
	if yes, _ := synchronized(bare, world, everyRank, false); yes > 0 {
		t.Errorf("bare markers only: %d world spikes synchronized on wall clock across hosts %v apart", yes, driftingHosts)
	}

	in, _, _ := driftJob(true)
	if yes, no := synchronized(in, world, everyRank, true); no > 0 || yes == 0 {
		t.Errorf("with the skew estimated: %d of %d world spikes' results not synchronized", no, yes+no)
	}
	if yes, _ := synchronized(in, single, func(i int) []int { return []int{int(single[i]/sec/60) % 8} }, false); yes > 0 {
		t.Errorf("%d one-rank spikes called synchronized", yes)
	}
}

// TestSkewEstimateFollowsDrift: the estimate of each host's clock relative
// to host 0 stays within 10 ms of the truth over 30 minutes in which drift
// moved the hosts apart by up to 0.33 s: one offset per host would not.
func TestSkewEstimateFollowsDrift(t *testing.T) {
	in, _, _ := driftJob(true)
	m := newMatcher(in, &Config{}, make([]rankAnalysis, len(in.Ranks)))
	s := estimateSkew(in, m.members)
	if s == nil {
		t.Fatal("no estimate")
	}
	for _, tt := range []int64{30 * sec, 600 * sec, 1200 * sec, 1790 * sec} {
		for r := range int32(8) {
			h := driftingHosts[r/2]
			truth := h.offset + int64(h.ppm*1e-6*float64(tt))
			local := t0 + tt + truth
			got := s.offset(r, local) - s.offset(0, t0+tt)
			if d := got - truth; d > 10*ms || d < -10*ms {
				t.Errorf("rank %d at %d s: offset %d ms, truth %d ms", r, tt/sec, got/ms, truth/ms)
			}
		}
	}
}

// TestNoSkewEstimateWithoutIdentity: with bare markers only there is
// nothing to match the hosts' markers by: no estimate, no correction.
func TestNoSkewEstimateWithoutIdentity(t *testing.T) {
	in, _, _ := driftJob(false)
	m := newMatcher(in, &Config{}, make([]rankAnalysis, len(in.Ranks)))
	if s := estimateSkew(in, m.members); s != nil {
		t.Fatalf("an estimate from bare markers: %+v", s.knots[1][:1])
	}
	var s *clockSkew
	if got := s.common(3, 12345); got != 12345 {
		t.Errorf("no estimate moves a time: %d", got)
	}
}

// TestSkewEstimatePooledByHost: a rank whose markers carry no identity
// (its collectives' wrappers are another process's) shares its host's
// clock, estimated from its host-mates' markers; without its host it has
// no estimate.
func TestSkewEstimatePooledByHost(t *testing.T) {
	in, _, _ := driftJob(true)
	for r := 1; r < 8; r += 2 {
		for i := range in.Ranks[r].Markers {
			in.Ranks[r].Markers[i].Collective = NoCollective
		}
	}
	m := newMatcher(in, &Config{}, make([]rankAnalysis, len(in.Ranks)))
	if s := estimateSkew(in, m.members); s == nil || len(s.knots[3]) > 0 {
		t.Fatal("rank 3, of no known host, has an estimate without markers of its own")
	}
	for r := range in.Ranks {
		in.Ranks[r].Host = []string{"node-a", "node-b", "node-c", "node-d"}[r/2]
	}
	s := estimateSkew(in, m.members)
	for _, tt := range []int64{30 * sec, 1790 * sec} {
		for r := int32(1); r < 8; r += 2 {
			h := driftingHosts[r/2]
			truth := h.offset + int64(h.ppm*1e-6*float64(tt))
			got := s.offset(r, t0+tt+truth) - s.offset(0, t0+tt)
			if d := got - truth; d > 10*ms || d < -10*ms {
				t.Errorf("rank %d at %d s: offset %d ms, truth %d ms", r, tt/sec, got/ms, truth/ms)
			}
		}
	}
}
