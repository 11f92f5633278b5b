package collectiveattrprocessor

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
)

func streamingConfig(emit EmitMode) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.EvaluationInterval = time.Second
	cfg.SettleDelay = 2 * time.Second
	cfg.JobIdleTimeout = 5 * time.Second
	cfg.Emit = emit
	return cfg
}

// TestStreamingOnSettle drives a job whose data keeps arriving with the
// synctest fake clock: each spike's results are emitted once, on the first
// tick after the job's newest event passes the interval end plus
// settle_delay, and never again; the idle job is then finalised and
// forgotten, and shutdown has nothing left to flush.
func TestStreamingOnSettle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := new(consumertest.LogsSink)
		p := newTestLogsProcessor(t, streamingConfig(EmitOnSettle), nopSettings(), sink)
		require.NoError(t, p.Start(context.Background(), nil))

		t0 := time.Now().UnixNano()
		const s = int64(time.Second)
		job := jobTraffic{job: "stream", ranks: 4, stepNs: s / 10, spikes: []int64{t0 + 35*s/10, t0 + 75*s/10}}
		var perStep []int
		for sec := range int64(11) {
			require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(job.lines(t0+sec*s, t0+(sec+1)*s))))
			time.Sleep(time.Second)
			synctest.Wait()
			perStep = append(perStep, len(resultLogs(t, sink)))
		}
		// Spike 1 ends at 3.62 s (+120 ms padding): settled once the newest
		// event (fed a second at a time) passes 5.62 s. Spike 2: 9.62 s.
		assert.Equal(t, []int{0, 0, 0, 0, 0, 4, 4, 4, 4, 8, 8}, perStep)

		results := resultLogs(t, sink)
		seen := map[string]bool{}
		for _, r := range results {
			k := intervalKey(r)
			assert.False(t, seen[k], "result %s emitted twice", k)
			seen[k] = true
			assert.Equal(t, "collective_confident", r["classification"])
		}

		time.Sleep(6 * time.Second) // past job_idle_timeout
		synctest.Wait()
		assert.Equal(t, 0, jobsTracked(p.core), "idle job forgotten")
		assert.Len(t, resultLogs(t, sink), 8, "finalising an emitted job emits nothing again")

		require.NoError(t, p.Shutdown(context.Background()))
		assert.Len(t, resultLogs(t, sink), 8)
	})
}

// TestShutdownFlushesPending: results that have not settled yet leave at
// Shutdown, within its context.
func TestShutdownFlushesPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := new(consumertest.LogsSink)
		p := newTestLogsProcessor(t, streamingConfig(EmitOnSettle), nopSettings(), sink)
		require.NoError(t, p.Start(context.Background(), nil))
		t0 := time.Now().UnixNano()
		const s = int64(time.Second)
		job := jobTraffic{job: "flush", ranks: 2, stepNs: s / 10, spikes: []int64{t0 + 15*s/10}}
		require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(job.lines(t0, t0+2*s))))
		time.Sleep(time.Second)
		synctest.Wait()
		require.Empty(t, resultLogs(t, sink), "not settled: newest 1.9 s <= 1.62 s + 2 s")

		require.NoError(t, p.Shutdown(context.Background()))
		results := resultLogs(t, sink)
		require.Len(t, results, 2)
		assert.Equal(t, "flush", results[0]["job_id"])
		assert.Equal(t, 0, jobsTracked(p.core))
	})
}

// TestOnJobEndEmitsOnceWhenIdle: with emit: on_job_end nothing leaves while
// data arrives; the idle job is emitted in full, once, and forgotten; new
// data afterwards starts a new job.
func TestOnJobEndEmitsOnceWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := new(consumertest.LogsSink)
		p := newTestLogsProcessor(t, streamingConfig(EmitOnJobEnd), nopSettings(), sink)
		require.NoError(t, p.Start(context.Background(), nil))
		t0 := time.Now().UnixNano()
		const s = int64(time.Second)
		job := jobTraffic{job: "end", ranks: 3, stepNs: s / 10, spikes: []int64{t0 + 15*s/10, t0 + 55*s/10}}
		for sec := range int64(8) {
			require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(job.lines(t0+sec*s, t0+(sec+1)*s))))
			time.Sleep(time.Second)
			synctest.Wait()
			require.Empty(t, resultLogs(t, sink))
		}
		assert.Equal(t, 1, jobsTracked(p.core))
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Len(t, resultLogs(t, sink), 6)
		assert.Equal(t, 0, jobsTracked(p.core))

		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.NoError(t, p.Shutdown(context.Background()))
		assert.Len(t, resultLogs(t, sink), 6, "nothing emitted twice")
	})
}
