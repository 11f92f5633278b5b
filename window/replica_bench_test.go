package window

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
)

// BenchmarkReplicaSortGaps measures one rank's round of the sorted gaps'
// upkeep, by window (samples buffered) and round (samples that came and
// as many that left): the replica synced, its sorted copy updated, room
// reserved. The samples' pushes are measured too (a few ns each).
func BenchmarkReplicaSortGaps(b *testing.B) {
	for _, window := range []int{1500, 3000} {
		for _, round := range []int{10, 100} {
			b.Run(fmt.Sprintf("window=%d/round=%d", window, round), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(23, 8))
				rb := &Rank{sessions: []string{""}}
				var (
					sc   Scratch
					tmp  gapBatches
					next int64
				)
				push := func(n int) {
					for range n {
						if rb.samples.len() == window {
							rb.samples.dropFront(1)
						}
						rb.samples.push(next, 1<<30+int64(rng.IntN(7))<<20+int64(rng.IntN(1<<20)), 80<<30, 0, window)
						next++
					}
				}
				round0 := func() {
					_, _, read := sc.samplesOf(rb, 0)
					read.rep.sortGaps(read.from, read.to, &tmp)
					sc.totals, sc.sessions = sc.totals[:0], sc.sessions[:0]
					sc.ReserveReplicas()
				}
				push(window)
				round0() // the first round sorts the window
				var ru0, ru1 syscall.Rusage
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
				for b.Loop() {
					push(round)
					_, _, read := sc.samplesOf(rb, 0)
					tmp.left, tmp.came = tmp.left[:0], tmp.came[:0]
					read.rep.sortGaps(read.from, read.to, &tmp)
					if len(tmp.came) != round {
						b.Fatalf("the round sorted the window anew instead of updating it (%d came)", len(tmp.came))
					}
					sc.totals, sc.sessions = sc.totals[:0], sc.sessions[:0]
					sc.ReserveReplicas()
				}
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
				// CPU time: the machine the benchmarks run on is shared.
				cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
				b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
