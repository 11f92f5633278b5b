package evidence

import (
	"fmt"
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
