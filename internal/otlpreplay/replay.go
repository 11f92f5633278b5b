// Package otlpreplay sends OTLP export requests written ahead of time (gpujobsim
// -requests-out) to a collector on their schedule, and measures how far behind it the
// sending fell: a real-time input whose pace does not depend on generating it, for the
// end-to-end scale run (e2e TestScaleRealTime, docs/sizing.md).
package otlpreplay

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// Clock is the time source of a replay; tests inject a fake one.
type Clock interface {
	Now() time.Time
	// SleepUntil returns at t or when ctx is done (with its error).
	SleepUntil(ctx context.Context, t time.Time) error
}

// WallClock is the real time.
type WallClock struct{}

func (WallClock) Now() time.Time { return time.Now() }

func (WallClock) SleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// Sender sends one request and returns once the receiver answered.
type Sender func(ctx context.Context, r jobsim.Request) error

// Report is what a replay measured, per request in the order sent.
type Report struct {
	// Late is how long after its scheduled time each request was sent: the pace of the
	// input, 0 when the sender kept the schedule.
	Late []time.Duration
	// Held is the part of Late a request waited for a free slot: the receiver's
	// backpressure (its answers slower than the input), not the sender's own delay.
	Held []time.Duration
	// Took is each request's round trip, from sending to the receiver's answer.
	Took []time.Duration
	// Bytes is the request bodies' total size.
	Bytes int64
	// Failed counts the requests whose sending failed; Err is the first failure.
	Failed int
	Err    error
}

// Schedule says when a replay sends each request.
type Schedule struct {
	// Epoch is the wall time of job time 0.
	Epoch time.Time
	// Spread spreads the requests due at one job time evenly over the Spread that follows
	// it, as the exporters of many hosts, each flushing at its own phase, send (0: all at
	// their due time, a burst).
	Spread time.Duration
	// InFlight bounds the requests awaiting an answer (at least 1).
	InFlight int
}

// at is when request i of the n due at job time due is sent.
func (s Schedule) at(due time.Duration, i, n int) time.Time {
	return s.Epoch.Add(due + s.Spread*time.Duration(i)/time.Duration(n))
}

// Replay sends reqs, ordered by due time (stably), on sched. It drops each request's body
// once sent, so that the memory the replay holds shrinks as it goes. It returns early,
// with ctx's error, when ctx ends.
func Replay(ctx context.Context, clock Clock, sched Schedule, reqs []jobsim.Request, send Sender) (Report, error) {
	slices.SortStableFunc(reqs, func(a, b jobsim.Request) int { return cmp.Compare(a.Due, b.Due) })
	rep := Report{Late: make([]time.Duration, len(reqs)), Held: make([]time.Duration, len(reqs)), Took: make([]time.Duration, len(reqs))}
	slots := make(chan struct{}, max(sched.InFlight, 1))
	var mu sync.Mutex
	var wg sync.WaitGroup
	var stopped error
	group, groupLen := 0, 0 // the index of the first request due with this one, and how many are
	for i := range reqs {
		if i == 0 || reqs[i].Due != reqs[group].Due {
			group, groupLen = i, 1
			for i+groupLen < len(reqs) && reqs[i+groupLen].Due == reqs[i].Due {
				groupLen++
			}
		}
		at := sched.at(reqs[i].Due, i-group, groupLen)
		// A request needs a free slot and its time, whichever comes last.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			stopped = ctx.Err()
		}
		if stopped != nil {
			break
		}
		rep.Held[i] = max(0, clock.Now().Sub(at))
		if stopped = clock.SleepUntil(ctx, at); stopped != nil {
			break
		}
		start := clock.Now()
		rep.Late[i] = max(0, start.Sub(at))
		rep.Bytes += int64(len(reqs[i].Body))
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := send(ctx, reqs[i])
			took := clock.Now().Sub(start)
			reqs[i].Body = nil
			mu.Lock()
			rep.Took[i] = took
			if err != nil {
				rep.Failed++
				if rep.Err == nil {
					rep.Err = err
				}
			}
			mu.Unlock()
			<-slots
		}()
	}
	wg.Wait()
	return rep, stopped
}
