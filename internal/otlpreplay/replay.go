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
	// Late is how long after its due time (epoch + Request.Due) each request was sent:
	// the pace of the input, 0 when the sender kept the schedule. A request waits for a
	// free connection slot, so a receiver slower than the input makes the sending late.
	Late []time.Duration
	// Took is each request's round trip, from sending to the receiver's answer.
	Took []time.Duration
	// Bytes is the request bodies' total size.
	Bytes int64
	// Failed counts the requests whose sending failed; Err is the first failure.
	Failed int
	Err    error
}

// Replay sends reqs, ordered by due time, each at epoch + its Due, with at most inFlight
// requests awaiting an answer. It drops each request's body once sent, so that the memory
// the replay holds shrinks as it goes. It returns early, with ctx's error, when ctx ends.
func Replay(ctx context.Context, clock Clock, epoch time.Time, reqs []jobsim.Request, inFlight int, send Sender) (Report, error) {
	slices.SortStableFunc(reqs, func(a, b jobsim.Request) int { return cmp.Compare(a.Due, b.Due) })
	inFlight = max(inFlight, 1)
	rep := Report{Late: make([]time.Duration, len(reqs)), Took: make([]time.Duration, len(reqs))}
	slots := make(chan struct{}, inFlight)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var stopped error
	for i := range reqs {
		// A request needs a free slot and its due time, whichever comes last.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			stopped = ctx.Err()
		}
		if stopped != nil {
			break
		}
		due := epoch.Add(reqs[i].Due)
		if stopped = clock.SleepUntil(ctx, due); stopped != nil {
			break
		}
		start := clock.Now()
		rep.Late[i] = max(0, start.Sub(due))
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
