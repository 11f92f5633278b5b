package collectiveattrprocessor

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkCheckpointEncode compares, in one run, a job's checkpoint
// encoded bare (as before the envelope) and sealed in its envelope (the
// CRC-32C over the whole value), by the job's ranks (60 s at 10 Hz each).
func BenchmarkCheckpointEncode(b *testing.B) {
	for _, ranks := range []int64{8, 64} {
		const s = int64(time.Second)
		base := (time.Now().UnixNano()/s - 120) * s
		p := newCoreLogs(b, storageConfig())
		traffic := jobTraffic{job: "bench", ranks: ranks, stepNs: s / 10, spikes: []int64{base + 10*s, base + 40*s}}
		if err := p.ConsumeLogs(context.Background(), stormlogLogs(traffic.lines(base, base+60*s))); err != nil {
			b.Fatal(err)
		}
		c := p.core
		job := c.store.Job("bench")
		buf := c.store.AppendCheckpoint(nil, job)
		b.Run(fmt.Sprintf("ranks=%d/bare", ranks), func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				buf = c.store.AppendCheckpoint(buf[:0], job)
			}
		})
		b.Run(fmt.Sprintf("ranks=%d/sealed", ranks), func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				buf = sealEnvelope(c.store.AppendCheckpoint(beginEnvelope(buf[:0]), job), 0)
			}
		})
		if err := p.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
