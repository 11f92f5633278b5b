package evidence

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
)

// BenchmarkAttributeAccounting is the engine on a job of n ranks at 10 Hz
// with a world all_reduce every second and a spike at every tenth, without
// and with NCCL's accounting (two communicators per rank sharing one
// manager, reported every 100 ms): the cost of judging the accounting.
func BenchmarkAttributeAccounting(b *testing.B) {
	for _, n := range []int{16, 64, 256} {
		j := newSim(n, 100*ms, 60*sec)
		j.worldAllReduces()
		var spikes []overlay
		for k := int64(5); k < 60; k += 10 {
			spikes = append(spikes, j.collectiveSpike(rankList(0, n), k, gib))
		}
		without := j.input()
		j.accounting(rankList(0, n), "world", 300<<20, spikes)
		j.accounting(rankList(0, n), "tp", 300<<20, spikes)
		with := j.input()
		cfg := mediumConfig(b)
		for _, c := range []struct {
			name string
			in   *Input
		}{{"without", without}, {"with", with}} {
			b.Run(fmt.Sprintf("ranks=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					Attribute(c.in, cfg, nil)
				}
			})
		}
	}
}

// BenchmarkAttributeStreaming is the engine as the processor runs it every
// round, by ranks: each rank buffers 3 000 samples at 10 Hz with a world
// all_reduce marker and a spike at it every 100 samples, keeps its
// BaselineCache, and each round 10 samples arrive and as many leave. What a
// round costs beyond the ranks' analysis is deciding every change of the
// window (about 30 a rank).
func BenchmarkAttributeStreaming(b *testing.B) {
	for _, n := range []int{16, 64, 256} {
		b.Run(fmt.Sprintf("ranks=%d", n), func(b *testing.B) {
			benchAttributeStreaming(b, n, 3000, 10)
		})
	}
}

func benchAttributeStreaming(b *testing.B, ranks, window, perRound int) {
	const step = 100 * ms
	s := streamingJob{ranks: ranks, step: step}
	s.more(window)
	in := Input{ExpectedWorldSize: int64(ranks), TraceStartNs: t0, Ranks: make([]RankData, ranks)}
	for r := range in.Ranks {
		in.Ranks[r] = RankData{Rank: int64(r), Baseline: &BaselineCache{}}
	}
	from := 0
	cfg := mediumConfig(b)
	s.window(&in, from, window)
	Attribute(&in, cfg, nil)
	b.ReportAllocs()
	for b.Loop() {
		from += perRound
		s.more(perRound)
		s.window(&in, from, window)
		Attribute(&in, cfg, nil)
	}
}

// streamingJob is BenchmarkAttributeStreaming's job: every rank's samples
// and markers so far, shared by the ranks (all ranks sample alike).
type streamingJob struct {
	ranks       int
	step        int64
	times, vals []int64
	totals      []int64
	markers     []Marker
	collectives []Collective
}

// more adds k samples, with a marker and a spike at every 100th.
func (s *streamingJob) more(k int) {
	for range k {
		i := int64(len(s.times))
		t := t0 + i*s.step
		v := 100*mibTest + (i*7919%13)*mibTest
		if i%100 == 50 {
			v = 2 * gib
			s.collectives = append(s.collectives, Collective{CommID: "world", Seq: i / 100, Op: "all_reduce", NRanks: int64(s.ranks)})
			s.markers = append(s.markers, Marker{StartNs: t, EndNs: t + 20*ms, Collective: int32(len(s.collectives) - 1)})
		}
		s.times, s.vals, s.totals = append(s.times, t), append(s.vals, v), append(s.totals, 80*gib)
	}
}

// window makes in the samples [from, from+n) of every rank and the markers
// among them.
func (s *streamingJob) window(in *Input, from, n int) {
	lo, _ := slices.BinarySearchFunc(s.markers, s.times[from], func(mk Marker, t int64) int { return cmp.Compare(mk.StartNs, t) })
	in.Collectives = s.collectives
	for r := range in.Ranks {
		rd := &in.Ranks[r]
		rd.Samples = Samples{TimesNs: s.times[from : from+n], GapBytes: s.vals[from : from+n], TotalBytes: s.totals[from : from+n],
			FirstSeq: uint64(from), Sequenced: true}
		rd.Markers = s.markers[lo:]
	}
}
