package otlpreplay

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// fakeClock moves only when told: SleepUntil jumps to its time, and a fake send moves it
// to when the send ends. Time never goes back, so the order in which the replay and its
// sends move it does not change what they read.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.advanceTo(t)
	return ctx.Err()
}

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func req(due time.Duration, body string) jobsim.Request {
	return jobsim.Request{Due: due, Signal: jobsim.SignalMetrics, Body: []byte(body)}
}

func TestPlanSpreadsEachIntervalOverItsSources(t *testing.T) {
	// Two metrics and two traces requests due at 1 s, and one of each at 2 s, spread over
	// 800 ms; the k-th request of a signal is always the same source (one host's ranks).
	tr := func(due time.Duration) jobsim.Request { return jobsim.Request{Due: due, Signal: jobsim.SignalTraces} }
	reqs := []jobsim.Request{req(time.Second, "m0"), req(time.Second, "m1"), tr(time.Second), tr(time.Second), req(2*time.Second, "m0"), tr(2 * time.Second)}
	when, sources := plan(Schedule{Epoch: epoch, Spread: 800 * time.Millisecond}, reqs)
	var at []time.Duration
	var src []int
	for _, p := range when {
		at = append(at, p.at.Sub(epoch))
		src = append(src, p.source)
	}
	assert.Equal(t, []time.Duration{1000 * time.Millisecond, 1200 * time.Millisecond, 1400 * time.Millisecond, 1600 * time.Millisecond,
		2000 * time.Millisecond, 2400 * time.Millisecond}, at)
	assert.Equal(t, []int{0, 1, 2, 3, 0, 2}, src)
	assert.Equal(t, 4, sources)

	when, _ = plan(Schedule{Epoch: epoch}, reqs)
	assert.Equal(t, epoch.Add(time.Second), when[3].at, "no spread: a burst at the due time")
}

func TestReplayKeepsTheSchedule(t *testing.T) {
	// One source (one request per due time), written out of order (two shards); each
	// send takes 100 ms.
	reqs := []jobsim.Request{req(3*time.Second, "c"), req(time.Second, "a"), req(2*time.Second, "b")}
	clock := &fakeClock{now: epoch}
	var sent []string
	rep, err := Replay(context.Background(), clock, Schedule{Epoch: epoch}, reqs, func(_ context.Context, r jobsim.Request) error {
		sent = append(sent, string(r.Body))
		clock.advanceTo(clock.Now().Add(100 * time.Millisecond))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, sent, "by due time")
	assert.Equal(t, []time.Duration{0, 0, 0}, rep.Late)
	assert.Equal(t, []time.Duration{0, 0, 0}, rep.Held)
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}, rep.Took)
	assert.Equal(t, int64(3), rep.Bytes)
	for _, r := range reqs {
		assert.Nil(t, r.Body, "a sent request's body is dropped")
	}
}

func TestReplayFallsBehindASlowReceiver(t *testing.T) {
	// The first request takes 2.5 s: its source's next two, due at 2 s and 3 s, wait for
	// its answer; the one at 3 s also waits 10 ms for the one at 2 s. The clock wakes the
	// sleeper for 4 s 30 ms late: the sender's own delay, not the receiver's.
	reqs := []jobsim.Request{req(time.Second, "slow"), req(2*time.Second, "b"), req(3*time.Second, "c"), req(4*time.Second, "d")}
	clock := &fakeClock{now: epoch}
	failure := errors.New("refused")
	rep, err := Replay(context.Background(), &lateClock{fakeClock: clock, by: map[time.Duration]time.Duration{4 * time.Second: 30 * time.Millisecond}},
		Schedule{Epoch: epoch}, reqs, func(_ context.Context, r jobsim.Request) error {
			took := 10 * time.Millisecond
			if string(r.Body) == "slow" {
				took = 2500 * time.Millisecond
			}
			clock.advanceTo(clock.Now().Add(took))
			if string(r.Body) == "b" {
				return failure
			}
			return nil
		})
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{0, 1500 * time.Millisecond, 510 * time.Millisecond, 30 * time.Millisecond}, rep.Late)
	assert.Equal(t, []time.Duration{0, 1500 * time.Millisecond, 510 * time.Millisecond, 0}, rep.Held)
	assert.Equal(t, 1, rep.Failed)
	assert.ErrorIs(t, rep.Err, failure)
}

// lateClock wakes its sleepers late by a given delay at given job times after epoch.
type lateClock struct {
	*fakeClock
	by map[time.Duration]time.Duration
}

func (c *lateClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.advanceTo(t.Add(c.by[t.Sub(epoch)]))
	return ctx.Err()
}

func TestReplayStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clock := &fakeClock{now: epoch}
	n := 0
	_, err := Replay(ctx, clock, Schedule{Epoch: epoch}, []jobsim.Request{req(time.Second, "a"), req(2*time.Second, "b")},
		func(context.Context, jobsim.Request) error {
			n++
			cancel()
			return nil
		})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, n, "nothing sent after the context ended")
}

// Many sources send at once: every request is sent once, each source's in order.
func TestReplaySourcesRunTogether(t *testing.T) {
	var reqs []jobsim.Request
	for due := range 5 {
		for k := range 40 {
			reqs = append(reqs, req(time.Duration(due)*time.Millisecond, string(rune('A'+k))))
		}
	}
	var mu sync.Mutex
	last := map[string]time.Duration{}
	sent := 0
	rep, err := Replay(context.Background(), WallClock{}, Schedule{Epoch: time.Now(), Spread: time.Millisecond}, reqs,
		func(_ context.Context, r jobsim.Request) error {
			mu.Lock()
			defer mu.Unlock()
			sent++
			if d, ok := last[string(r.Body)]; ok && d >= r.Due {
				t.Errorf("source %s sent job time %s after %s", r.Body, r.Due, d)
			}
			last[string(r.Body)] = r.Due
			return nil
		})
	require.NoError(t, err)
	assert.Equal(t, 200, sent)
	assert.Len(t, last, 40)
	assert.Equal(t, 40, rep.Sources)
	assert.Equal(t, int64(200), rep.Bytes)
}
