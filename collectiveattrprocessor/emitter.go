package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
)

// flushEmitter waits for the emitter to deliver what is queued, until ctx
// ends or the shutdown's emission deadline passes; then it stops the
// emitter, so that nothing reaches a pipeline after its Shutdown.
func (c *core) flushEmitter(ctx context.Context) {
	c.lifeMu.Lock()
	if c.emitDeadline.IsZero() {
		c.emitDeadline = time.Now().Add(c.cfg.EmitTimeout)
	}
	deadline := c.emitDeadline
	c.lifeMu.Unlock()
	flushCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if !c.emitter.flush(flushCtx) {
		c.emitter.stop()
	}
}

// emitQueueBatches bounds the result batches waiting per signal. A round
// of evaluation makes at most one batch per signal, so this is as many
// rounds as a slow downstream may fall behind before batches are dropped;
// a result metrics batch may hold up to maxHiddenPointsPerTick points, so
// the bound is also one on memory.
const emitQueueBatches = 10

// emitFailure is why a result batch was not delivered.
type emitFailure int

const (
	// emitRefused: the next consumer returned an error.
	emitRefused emitFailure = iota
	// emitTimeout: the next consumer did not return within emit_timeout.
	emitTimeout
	// emitQueueFull: the signal's queue held emitQueueBatches batches.
	emitQueueFull
	// emitShutdown: still queued or being sent when shutdown's time for
	// emission ran out.
	emitShutdown
	numEmitFailures
)

func (f emitFailure) String() string {
	return [...]metadata.AttributeEmitReason{
		metadata.AttributeEmitReasonRefused, metadata.AttributeEmitReasonTimeout,
		metadata.AttributeEmitReasonQueueFull, metadata.AttributeEmitReasonShutdown,
	}[f].String()
}

// resultBatch is one result batch (traces, metrics or logs) bound for its
// next consumer.
type resultBatch struct {
	// results is the number of results it carries (0 for a metrics batch),
	// for the log line of a failure.
	results int
	send    func(context.Context) error
	// accepted, if set, is called when the consumer accepted the batch.
	accepted func()
}

// emitter delivers result batches to the next consumers off the evaluation
// goroutine, so that neither evaluation nor ingestion ever waits for the
// downstream: one goroutine and one bounded queue per signal (a stuck
// traces exporter does not delay the logs), each send with a deadline of
// emit_timeout. A batch that finds its queue full, that is refused, that
// times out or that is still pending when stop is called is dropped and
// counted (emit_failures, by signal and reason). The goroutines start with
// the first batch and end with stop.
type emitter struct {
	timeout time.Duration
	logger  *zap.Logger
	// failed counts n undelivered batches of signal s for reason f.
	failed func(s signal, f emitFailure, n int64)

	mu      sync.Mutex
	started bool
	stopped bool
	queues  [numSignals]chan resultBatch
	// pending are the batches queued or being sent, per signal; changed is
	// closed (and replaced) whenever a send ends, waking flush.
	pending [numSignals]int
	changed chan struct{}
	// base ends the sends in flight when the emitter stops.
	base   context.Context
	cancel context.CancelFunc
	logged failureLog
}

func newEmitter(timeout time.Duration, logger *zap.Logger, failed func(signal, emitFailure, int64)) *emitter {
	e := &emitter{timeout: timeout, logger: logger, failed: failed, changed: make(chan struct{})}
	e.base, e.cancel = context.WithCancel(context.Background())
	for s := range numSignals {
		e.queues[s] = make(chan resultBatch, emitQueueBatches)
	}
	return e
}

// enqueue hands a batch of signal s to its goroutine without waiting; it is
// dropped and counted when the queue is full or the emitter has stopped.
func (e *emitter) enqueue(s signal, b resultBatch) {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		e.fail(s, emitShutdown, b.results, nil)
		return
	}
	if !e.started {
		e.started = true
		for sig := range numSignals {
			go e.deliver(sig)
		}
	}
	select {
	case e.queues[s] <- b:
		e.pending[s]++
		e.mu.Unlock()
	default:
		e.mu.Unlock()
		e.fail(s, emitQueueFull, b.results, nil)
	}
}

// deliver sends signal s's batches in order until the emitter stops.
func (e *emitter) deliver(s signal) {
	for {
		select {
		case <-e.base.Done():
			return
		case b := <-e.queues[s]:
			e.send(s, b)
		}
	}
}

func (e *emitter) send(s signal, b resultBatch) {
	ctx, cancel := context.WithTimeout(e.base, e.timeout)
	err := b.send(ctx)
	if err == nil && b.accepted != nil {
		b.accepted()
	}
	f := emitRefused
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		f = emitTimeout
	}
	cancel()
	e.mu.Lock()
	// Once stopped, stop has counted this batch among the pending ones.
	// The count comes before the wake-up, so that a flush that returns has
	// seen it.
	report := err != nil && !e.stopped
	if report {
		e.failed(s, f, 1)
	}
	e.pending[s]--
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
	if report {
		e.logged.log(e.logger, s, f, b.results, err)
	}
}

// flush waits until every batch queued so far has been sent (or has failed)
// or ctx ends; it reports whether nothing is pending.
func (e *emitter) flush(ctx context.Context) bool {
	for {
		e.mu.Lock()
		idle := e.stopped || e.pending == [numSignals]int{}
		changed := e.changed
		e.mu.Unlock()
		if idle {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// stop ends the goroutines and the sends in flight (a consumer that
// honours its context returns at once; one that does not is left to
// finish on its own) and counts every pending batch as emitShutdown. Later
// batches are dropped the same way. It does not wait.
func (e *emitter) stop() {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return
	}
	e.stopped = true
	e.cancel()
	var lost [numSignals]int
	for s := range numSignals {
		lost[s] = e.pending[s]
	drain:
		for {
			select {
			case <-e.queues[s]:
			default:
				break drain
			}
		}
	}
	e.mu.Unlock()
	for s, n := range lost {
		if n > 0 {
			e.failed(signal(s), emitShutdown, int64(n))
			e.logger.Error("collectiveattr: result batches not delivered before shutdown's deadline for emission",
				zap.String("signal", signal(s).String()), zap.Int("batches", n))
		}
	}
}

// fail counts one undelivered batch and logs it (rate-limited); err is the
// consumer's, if any.
func (e *emitter) fail(s signal, f emitFailure, results int, err error) {
	e.failed(s, f, 1)
	e.logged.log(e.logger, s, f, results, err)
}

// failureLog logs undelivered batches at most once per (signal, reason)
// per minute, with the number suppressed in between: a dead downstream
// fails every round.
type failureLog struct {
	mu         sync.Mutex
	last       [numSignals][numEmitFailures]time.Time
	suppressed [numSignals][numEmitFailures]int64
}

const failureLogPeriod = time.Minute

func (l *failureLog) log(logger *zap.Logger, s signal, f emitFailure, results int, err error) {
	l.mu.Lock()
	now := time.Now()
	if last := l.last[s][f]; !last.IsZero() && now.Sub(last) < failureLogPeriod {
		l.suppressed[s][f]++
		l.mu.Unlock()
		return
	}
	suppressed := l.suppressed[s][f]
	l.last[s][f], l.suppressed[s][f] = now, 0
	l.mu.Unlock()
	logger.Error("collectiveattr: a result batch was not delivered to the next consumer",
		zap.String("signal", s.String()),
		zap.String("reason", f.String()),
		zap.Int("results", results),
		zap.Int64("suppressed_since_last_log", suppressed),
		zap.Error(err))
}
