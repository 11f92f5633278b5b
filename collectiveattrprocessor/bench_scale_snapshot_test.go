package collectiveattrprocessor

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/internal/scale"
)

// BenchmarkScaleRoundSnapshot measures, by ranks, how long an evaluation
// round holds the buffers' lock to read a job with a full window (5 min at
// 10 Hz: 3 000 samples per rank, evaluationJob's job; shorter past 4 096
// ranks, below): each iteration buffers the next 10 s of the job (100
// samples per rank, the default evaluation interval; the window drops as
// many), then times the engine's read under the lock (ns/op; max-lock-ns
// the slowest; cpu-ns/op the reading thread's CPU time, which the
// machine's other processes do not inflate, and which
// internal/scale/fit.sh fits), then runs the attribution untimed.
// Ingestion waits at most that long for a round, so it should grow with
// what arrived since the last round, not with the window.
func BenchmarkScaleRoundSnapshot(b *testing.B) {
	const interval = 100
	for _, mode := range []AttributionMode{ModeReference, ModeEvidence} {
		for _, ranks := range scale.Sizes() {
			// Past 4 096 ranks the window is shortened to hold about 4 096
			// full windows' samples (700 at 16 384 ranks: about 4 GB for
			// the benchmark); a read copies what arrived since the last
			// one, whatever the window. A whole number of intervals keeps
			// the markers in it (one per interval) the same from round to
			// round.
			window := int64(3000*min(1, 4096.0/float64(ranks))) / interval * interval
			b.Run("mode="+string(mode)+"/ranks="+strconv.Itoa(ranks), func(b *testing.B) {
				cfg := createDefaultConfig().(*Config)
				cfg.Mode = mode
				// The store's window is the samples added, so that every
				// round trims what it adds (a running job's steady state)
				// and no size's replicas are still growing.
				cfg.Window = time.Duration(window) * time.Second / benchHz
				p := newCoreLogs(b, cfg)
				b.Cleanup(func() { _ = p.Shutdown(b.Context()) })
				c := p.core
				step := int64(time.Second) / benchHz
				// An hour back, so that no round's data is ahead of the clock.
				start := (time.Now().Add(-time.Hour).UnixNano()) / step * step
				addEvaluationSamples(c, int64(ranks), start, 0, window)
				next := window
				var cpu time.Duration
				round := func(b *testing.B) time.Duration {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					c.mu.Lock()
					b.StartTimer()
					t0, cpu0 := time.Now(), threadCPU()
					run := c.engine.read(c.store.Job("big").Job)
					held := time.Since(t0)
					cpu += threadCPU() - cpu0
					b.StopTimer()
					c.mu.Unlock()
					run()
					c.engine.release()
					return held
				}
				// The first read copies the whole window; the next ones, like
				// the timed ones, what arrived, and grow the scratch to its
				// size for a running job.
				round(b)
				for range 2 {
					addEvaluationSamples(c, int64(ranks), start, next, next+interval)
					next += interval
					round(b)
				}
				var slowest time.Duration
				cpu = 0
				b.ResetTimer()
				b.StopTimer()
				for range b.N {
					addEvaluationSamples(c, int64(ranks), start, next, next+interval)
					next += interval
					slowest = max(slowest, round(b))
				}
				b.ReportMetric(float64(slowest.Nanoseconds()), "max-lock-ns")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
