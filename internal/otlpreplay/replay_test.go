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

func TestReplayKeepsTheSchedule(t *testing.T) {
	// Written out of order (two shards); each send takes 100 ms of a 1 s interval.
	reqs := []jobsim.Request{req(2*time.Second, "c"), req(time.Second, "a"), req(time.Second, "b"), req(3*time.Second, "d")}
	clock := &fakeClock{now: epoch}
	var sent []string
	var sentAt []time.Duration
	rep, err := Replay(context.Background(), clock, Schedule{Epoch: epoch, InFlight: 1}, reqs, func(_ context.Context, r jobsim.Request) error {
		sent = append(sent, string(r.Body))
		start := clock.Now()
		sentAt = append(sentAt, start.Sub(epoch))
		clock.advanceTo(start.Add(100 * time.Millisecond))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "d"}, sent, "by due time, in written order within one")
	assert.Equal(t, []time.Duration{time.Second, 1100 * time.Millisecond, 2 * time.Second, 3 * time.Second}, sentAt)
	// b waited for a's answer (one request in flight).
	assert.Equal(t, []time.Duration{0, 100 * time.Millisecond, 0, 0}, rep.Late)
	assert.Equal(t, rep.Late, rep.Held, "all of it waiting for the receiver")
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}, rep.Took)
	assert.Equal(t, int64(4), rep.Bytes)
	for _, r := range reqs {
		assert.Nil(t, r.Body, "a sent request's body is dropped")
	}
}

func TestReplayFallsBehindASlowReceiver(t *testing.T) {
	// The second request takes 2.5 s: the next two, due at 2 s and 3 s, wait for it.
	reqs := []jobsim.Request{req(time.Second, "a"), req(time.Second, "slow"), req(2*time.Second, "c"), req(3*time.Second, "d")}
	clock := &fakeClock{now: epoch}
	failure := errors.New("refused")
	rep, err := Replay(context.Background(), clock, Schedule{Epoch: epoch, InFlight: 1}, reqs, func(_ context.Context, r jobsim.Request) error {
		took := 10 * time.Millisecond
		if string(r.Body) == "slow" {
			took = 2500 * time.Millisecond
		}
		clock.advanceTo(clock.Now().Add(took))
		if string(r.Body) == "c" {
			return failure
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{0, 10 * time.Millisecond, 1510 * time.Millisecond, 520 * time.Millisecond}, rep.Late)
	assert.Equal(t, rep.Late, rep.Held)
	assert.Equal(t, 1, rep.Failed)
	assert.ErrorIs(t, rep.Err, failure)
}

func TestReplayStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clock := &fakeClock{now: epoch}
	n := 0
	_, err := Replay(ctx, clock, Schedule{Epoch: epoch, InFlight: 1}, []jobsim.Request{req(time.Second, "a"), req(2*time.Second, "b")},
		func(context.Context, jobsim.Request) error {
			n++
			cancel()
			return nil
		})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, n, "nothing sent after the context ended")
}

func TestReplaySpreadsARequestBurst(t *testing.T) {
	// Four requests due at 1 s and one at 2 s, spread over 800 ms: 1 s, 1.2 s, 1.4 s,
	// 1.6 s, then 2 s. The third takes 300 ms, so the fourth is held 100 ms for its slot;
	// the fifth is 30 ms late by the sender's own delay (its clock jumps past the time).
	reqs := []jobsim.Request{req(time.Second, "a"), req(time.Second, "b"), req(time.Second, "slow"), req(time.Second, "d"), req(2*time.Second, "e")}
	clock := &fakeClock{now: epoch}
	var sentAt []time.Duration
	rep, err := Replay(context.Background(), &lateClock{fakeClock: clock, by: map[time.Duration]time.Duration{2 * time.Second: 30 * time.Millisecond}},
		Schedule{Epoch: epoch, Spread: 800 * time.Millisecond, InFlight: 1}, reqs, func(_ context.Context, r jobsim.Request) error {
			sentAt = append(sentAt, clock.Now().Sub(epoch))
			took := 10 * time.Millisecond
			if string(r.Body) == "slow" {
				took = 300 * time.Millisecond
			}
			clock.advanceTo(clock.Now().Add(took))
			return nil
		})
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{1000 * time.Millisecond, 1200 * time.Millisecond, 1400 * time.Millisecond, 1700 * time.Millisecond, 2030 * time.Millisecond}, sentAt)
	assert.Equal(t, []time.Duration{0, 0, 0, 100 * time.Millisecond, 30 * time.Millisecond}, rep.Late)
	assert.Equal(t, []time.Duration{0, 0, 0, 100 * time.Millisecond, 0}, rep.Held)
}

// lateClock wakes its sleepers late by a given delay for given job times after epoch.
type lateClock struct {
	*fakeClock
	by map[time.Duration]time.Duration
}

func (c *lateClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.advanceTo(t.Add(c.by[t.Sub(epoch)]))
	return ctx.Err()
}
