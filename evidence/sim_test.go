package evidence

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

const (
	ms  = int64(1_000_000)
	sec = 1000 * ms
	gib = int64(1 << 30)
	t0  = int64(1_767_225_600) * sec
)

// simJob builds an Input directly: ranks sampled at a fixed rate with a
// flat baseline, changes laid over it, collectives with one marker per
// member, and optional NCCL accounting.
type simJob struct {
	ranks    int
	interval int64
	duration int64
	offset   map[int]int64 // per-rank clock offset added to every time
	overlays map[int][]overlay
	in       Input
	markers  map[int][]Marker
	acct     map[int]map[string][]acctPoint
	colls    map[collectiveKey]int32
	noise    int64         // standard deviation of per-sample noise, bytes
	phase    map[int]int64 // per-rank time of the first sample (0 when absent)
}

type overlay struct {
	start, end int64 // true time; end < 0: persistent
	bytes      int64
}

type acctPoint struct{ t, bytes int64 }

func newSim(ranks int, interval, duration int64) *simJob {
	return &simJob{
		ranks: ranks, interval: interval, duration: duration,
		offset: map[int]int64{}, overlays: map[int][]overlay{},
		markers: map[int][]Marker{}, acct: map[int]map[string][]acctPoint{},
		colls: map[collectiveKey]int32{},
	}
}

// change lays bytes over the ranks' hidden memory from start to end (end
// < 0: to the end of the job).
func (j *simJob) change(ranks []int, start, end, bytes int64) {
	for _, r := range ranks {
		j.overlays[r] = append(j.overlays[r], overlay{start, end, bytes})
	}
}

// collective adds one marker per rank of (comm, op, seq) at start+launch[i].
func (j *simJob) collective(comm string, seq int64, op string, ranks []int, start, dur int64, approximate bool) {
	key := collectiveKey{comm, op, seq}
	ci, ok := j.colls[key]
	if !ok {
		j.in.Collectives = append(j.in.Collectives, Collective{CommID: comm, Seq: seq, Op: op, NRanks: int64(len(ranks))})
		ci = int32(len(j.in.Collectives) - 1)
		j.colls[key] = ci
	}
	for i, r := range ranks {
		st := start + int64(i%4)*3*ms + j.offset[r]
		j.markers[r] = append(j.markers[r], Marker{StartNs: st, EndNs: st + dur, Collective: ci, Approximate: approximate})
	}
}

// accounting adds NCCL reports of comm on the ranks every 100 ms: base plus
// the bytes of the given overlays while active.
func (j *simJob) accounting(ranks []int, comm string, base int64, covered []overlay) {
	for _, r := range ranks {
		if j.acct[r] == nil {
			j.acct[r] = map[string][]acctPoint{}
		}
		for t := int64(0); t < j.duration; t += 100 * ms {
			v := base
			for _, o := range covered {
				if t >= o.start && (o.end < 0 || t < o.end) {
					v += o.bytes
				}
			}
			j.acct[r][comm] = append(j.acct[r][comm], acctPoint{t0 + t + 37*ms + j.offset[r], v})
		}
	}
}

func (j *simJob) input() *Input {
	rng := rand.New(rand.NewPCG(1, 2))
	in := j.in
	in.ExpectedWorldSize = int64(j.ranks)
	in.TraceStartNs = t0
	for r := 0; r < j.ranks; r++ {
		rd := RankData{Rank: int64(r)}
		for t := j.phase[r]; t < j.duration; t += j.interval {
			gap := int64(800 << 20)
			for _, o := range j.overlays[r] {
				if t >= o.start && (o.end < 0 || t < o.end) {
					gap += o.bytes
				}
			}
			if j.noise > 0 {
				gap += int64(rng.NormFloat64() * float64(j.noise))
			}
			rd.Samples.TimesNs = append(rd.Samples.TimesNs, t0+t+j.offset[r])
			rd.Samples.GapBytes = append(rd.Samples.GapBytes, gap)
			rd.Samples.TotalBytes = append(rd.Samples.TotalBytes, 80*gib)
		}
		rd.Markers = slices.Clone(j.markers[r])
		for i := range rd.Markers {
			rd.Markers[i].StartNs += t0
			rd.Markers[i].EndNs += t0
		}
		slices.SortStableFunc(rd.Markers, func(a, b Marker) int { return cmp.Compare(a.StartNs, b.StartNs) })
		comms := make([]string, 0, len(j.acct[r]))
		for c := range j.acct[r] {
			comms = append(comms, c)
		}
		slices.Sort(comms)
		for _, c := range comms {
			a := AccountingSeries{CommID: c}
			for _, p := range j.acct[r][c] {
				a.TimesNs = append(a.TimesNs, p.t)
				a.Bytes = append(a.Bytes, p.bytes)
			}
			rd.Accounting = append(rd.Accounting, a)
		}
		in.Ranks = append(in.Ranks, rd)
	}
	return &in
}

func rankList(from, to int) []int {
	var out []int
	for r := from; r < to; r++ {
		out = append(out, r)
	}
	return out
}

func mediumConfig(t testing.TB) Config {
	t.Helper()
	cfg, err := ResolveConfig("medium", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// resultsAt returns the results of rank whose interval contains true time
// t (rank clock offset applied).
func (j *simJob) resultsAt(results []attribution.Result, rank int, t int64) []attribution.Result {
	var out []attribution.Result
	at := t0 + t + j.offset[rank]
	for _, r := range results {
		if r.Rank == int64(rank) && r.IntervalStartNs <= at && uint64(at) <= r.IntervalEndNs {
			out = append(out, r)
		}
	}
	return out
}
