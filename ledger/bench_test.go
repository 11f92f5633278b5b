package ledger

import (
	"fmt"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
)

// benchInput is ranks × 1 000 samples at 10 Hz; even ranks report two
// communicators' accounting every 100 ms, odd ranks have a transient and a
// persistent attributed change every 100 samples.
func benchInput(ranks int) *Input {
	const n = 1000
	in := &Input{PaddingNs: 50 * ms}
	for r := range int64(ranks) {
		ri := RankInput{Rank: r}
		for i := range int64(n) {
			ri.Samples.TimesNs = append(ri.Samples.TimesNs, i*100*ms)
			ri.Samples.ReservedBytes = append(ri.Samples.ReservedBytes, 20*gib)
			ri.Samples.UsedBytes = append(ri.Samples.UsedBytes, 21*gib+(i%7)*mib)
		}
		if r%2 == 0 {
			for c := range 2 {
				s := evidence.AccountingSeries{CommID: fmt.Sprint(c)}
				for i := range int64(n) {
					s.TimesNs = append(s.TimesNs, i*100*ms+30*ms)
					s.Bytes = append(s.Bytes, int64(c+1)*100*mib+(i%3)*mib)
				}
				ri.Accounting = append(ri.Accounting, s)
			}
		} else {
			for i := int64(0); i < n; i += 100 {
				in.Results = append(in.Results,
					attribution.Result{Rank: r, IntervalStartNs: i * 100 * ms, IntervalEndNs: uint64(i*100*ms + 400*ms),
						Classification: attribution.CollectiveConfident, Mode: attribution.ModeEvidence,
						Kind: attribution.KindTransient, ExcessBytes: gib},
					attribution.Result{Rank: r, IntervalStartNs: i*100*ms + 5*sec, IntervalEndNs: uint64(i*100*ms + 5*sec + 100*ms),
						Classification: attribution.CollectiveConfirmed, Mode: attribution.ModeEvidence,
						Kind: attribution.KindPersistent, ExcessBytes: 64 * mib})
			}
		}
		in.Ranks = append(in.Ranks, ri)
	}
	return in
}

// BenchmarkLedger reads every row of a job, by ranks (ns/row is per sample).
func BenchmarkLedger(b *testing.B) {
	for _, ranks := range []int{16, 256, 2048} {
		in := benchInput(ranks)
		b.Run(fmt.Sprintf("ranks=%d", ranks), func(b *testing.B) {
			b.ReportAllocs()
			rows := 0
			for b.Loop() {
				l := New(in)
				var r Row
				for l.Next(&r) {
					rows++
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
		})
	}
}

// BenchmarkLedgerLatestMinute reads a job as the processor reads it at
// every evaluation, by ranks and samples per rank (10 Hz): per rank the
// rows of its latest GrowthWindowNs, judged for growth, from a Ledger
// reset for the input.
func BenchmarkLedgerLatestMinute(b *testing.B) {
	for _, ranks := range []int{16, 256} {
		for _, samples := range []int{1000, 3000} {
			in := benchInput(ranks)
			in = stretchInput(in, samples)
			b.Run(fmt.Sprintf("ranks=%d/samples=%d", ranks, samples), func(b *testing.B) {
				var (
					l   Ledger
					g   GrowthDetector
					row Row
				)
				b.ReportAllocs()
				for b.Loop() {
					l.Reset(in)
					for ri := range in.Ranks {
						times := in.Ranks[ri].Samples.TimesNs
						l.SeekOf(ri, times[len(times)-1]-GrowthWindowNs)
						l.ReadOf(ri, &g, &row)
						g.Detect()
					}
				}
			})
		}
	}
}

// stretchInput repeats benchInput's samples, accounting and results of
// every rank to n samples.
func stretchInput(in *Input, n int) *Input {
	out := &Input{PaddingNs: in.PaddingNs}
	period := 1000 * 100 * ms
	for _, ri := range in.Ranks {
		o := RankInput{Rank: ri.Rank}
		s := &ri.Samples
		for i := range n {
			k, shift := i%s.Len(), int64(i/s.Len())*period
			o.Samples.TimesNs = append(o.Samples.TimesNs, s.TimesNs[k]+shift)
			o.Samples.UsedBytes = append(o.Samples.UsedBytes, s.UsedBytes[k])
			o.Samples.ReservedBytes = append(o.Samples.ReservedBytes, s.ReservedBytes[k])
		}
		for _, a := range ri.Accounting {
			oa := evidence.AccountingSeries{CommID: a.CommID}
			for i := range n {
				k, shift := i%len(a.TimesNs), int64(i/len(a.TimesNs))*period
				oa.TimesNs = append(oa.TimesNs, a.TimesNs[k]+shift)
				oa.Bytes = append(oa.Bytes, a.Bytes[k])
			}
			o.Accounting = append(o.Accounting, oa)
		}
		out.Ranks = append(out.Ranks, o)
	}
	for rep := int64(0); rep*1000 < int64(n); rep++ {
		for _, r := range in.Results {
			r.IntervalStartNs += rep * period
			r.IntervalEndNs += uint64(rep * period)
			out.Results = append(out.Results, r)
		}
	}
	return out
}
