package collectiveattrprocessor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
)

// manualClock is a wall clock a test moves; its ticker never fires (the
// test evaluates by hand).
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (m *manualClock) now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.t
}

func (m *manualClock) advance(d time.Duration) {
	m.mu.Lock()
	m.t = m.t.Add(d)
	m.mu.Unlock()
}

func (m *manualClock) clock() clock {
	return clock{now: m.now, newTicker: func(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }}
}

// TestReplayAfterJobEndDoesNotEmitAgain (issue 16 item 4): a job's data
// replayed after the job went idle and was forgotten recreates the job, but
// the results it emitted, remembered beyond the job, do not leave again.
func TestReplayAfterJobEndDoesNotEmitAgain(t *testing.T) {
	for _, mode := range []EmitMode{EmitOnJobEnd, EmitOnSettle} {
		t.Run(string(mode), func(t *testing.T) {
			const s = int64(time.Second)
			clk := &manualClock{t: time.Unix(1_800_000_000, 0)}
			cfg := createDefaultConfig().(*Config)
			cfg.Emit = mode
			f := newFactory(clk.clock())
			sink := new(consumertest.LogsSink)
			p, err := f.processorFactory().CreateLogs(context.Background(), nopSettings(), cfg, sink)
			require.NoError(t, err)
			require.NoError(t, p.Start(context.Background(), nil))
			c := f.cores[cfg]
			ctx := context.Background()

			now := clk.now().UnixNano()
			job := jobTraffic{job: "replayed", ranks: 2, stepNs: s / 10, spikes: []int64{now - 5*s}}
			lines := job.lines(now-10*s, now)
			emitAfterIdle := func() int {
				clk.advance(2 * cfg.JobIdleTimeout)
				require.NoError(t, c.evaluate(ctx, false))
				c.flushEmitter(ctx)
				return len(resultLogs(t, sink))
			}

			require.NoError(t, p.ConsumeLogs(ctx, stormlogLogs(lines)))
			first := emitAfterIdle()
			require.Positive(t, first)
			require.Zero(t, jobsTracked(c), "the idle job is forgotten")

			require.NoError(t, p.ConsumeLogs(ctx, stormlogLogs(lines)))
			assert.Equal(t, first, emitAfterIdle(), "the replay emits nothing new")
			require.NoError(t, p.Shutdown(ctx))
			assert.Equal(t, first, len(resultLogs(t, sink)))
		})
	}
}
