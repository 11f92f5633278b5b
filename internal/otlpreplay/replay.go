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
	"sync/atomic"
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
	// Held is the part of Late a request waited for the answer to its source's previous
	// request: the receiver's backpressure, not the sender's own delay.
	Held []time.Duration
	// Took is each request's round trip, from sending to the receiver's answer.
	Took []time.Duration
	// Bytes is the request bodies' total size; Sources the senders that ran together.
	Bytes   int64
	Sources int
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
}

// planned says when a request is sent and by which source.
type planned struct {
	at     time.Time
	source int
}

// plan schedules reqs, ordered by due time: the k-th request of a signal due at one job
// time comes from that signal's k-th source (with gpujobsim -ranks-per-request, the same
// ranks every interval: one host's agent), at the k-th step of the spread over all the
// requests due then. It returns the number of sources.
func plan(sched Schedule, reqs []jobsim.Request) ([]planned, int) {
	out := make([]planned, len(reqs))
	sources := map[[2]int]int{} // (signal, k) → source
	for i := 0; i < len(reqs); {
		n := 1
		for i+n < len(reqs) && reqs[i+n].Due == reqs[i].Due {
			n++
		}
		perSignal := map[jobsim.Signal]int{}
		for j := range n {
			r := reqs[i+j]
			key := [2]int{int(r.Signal), perSignal[r.Signal]}
			perSignal[r.Signal]++
			src, ok := sources[key]
			if !ok {
				src = len(sources)
				sources[key] = src
			}
			out[i+j] = planned{at: sched.Epoch.Add(r.Due + sched.Spread*time.Duration(j)/time.Duration(n)), source: src}
		}
		i += n
	}
	return out, len(sources)
}

// Replay sends reqs, ordered by due time (stably), on sched. Each source sends its
// requests in order, the next once the receiver answered the previous, as an agent's
// exporter does; sources do not wait for each other. It drops each request's body once
// sent, so that the memory the replay holds shrinks as it goes. It returns early, with
// ctx's error, when ctx ends.
func Replay(ctx context.Context, clock Clock, sched Schedule, reqs []jobsim.Request, send Sender) (Report, error) {
	slices.SortStableFunc(reqs, func(a, b jobsim.Request) int { return cmp.Compare(a.Due, b.Due) })
	when, nSources := plan(sched, reqs)
	bySource := make([][]int, nSources)
	for i, p := range when {
		bySource[p.source] = append(bySource[p.source], i)
	}
	rep := Report{Late: make([]time.Duration, len(reqs)), Held: make([]time.Duration, len(reqs)), Took: make([]time.Duration, len(reqs)),
		Sources: nSources}
	var bytes atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, idx := range bySource {
		wg.Go(func() {
			var answered time.Time
			for _, i := range idx {
				at := when[i].at
				if clock.SleepUntil(ctx, at) != nil {
					return
				}
				start := clock.Now()
				rep.Late[i] = max(0, start.Sub(at))
				rep.Held[i] = max(0, answered.Sub(at))
				bytes.Add(int64(len(reqs[i].Body)))
				err := send(ctx, reqs[i])
				answered = clock.Now()
				rep.Took[i] = answered.Sub(start)
				reqs[i].Body = nil
				if err != nil {
					mu.Lock()
					rep.Failed++
					if rep.Err == nil {
						rep.Err = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	rep.Bytes = bytes.Load()
	return rep, ctx.Err()
}
