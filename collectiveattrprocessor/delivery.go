package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/store"
)

// With storage, a finalised job's results are delivered at least once: the
// round that finalises a job writes its final checkpoint (the job as it was
// before the round claimed its results, marked flagFinal) in place of its
// live one, and the checkpoint is deleted only once the next consumer of
// every signal the round emitted to has accepted its batch (the consumer
// call returned nil). A crash, or a shutdown whose time for emission ran
// out, before that leaves the final checkpoint in the storage: the next
// start restores the job and finalises it again, emitting its results a
// second time (duplicates are possible; with an exporter's persistent
// sending queue, delivery is exactly once across a crash in practice). A
// batch the consumer refused or did not take within emit_timeout is
// counted (emit_failures) and its jobs' final checkpoints stay too, until a
// restart re-emits them.

// finalJob is a finalised job's final checkpoint until its round's results
// are accepted.
type finalJob struct {
	// round is the evaluation round that finalised the job.
	round uint64
	// value is the sealed checkpoint, kept until it is written.
	value   []byte
	written bool
}

// ackSet holds the rounds whose every result batch was accepted, filled by
// the emitter's goroutines and taken at the next checkpoint.
type ackSet struct {
	mu     sync.Mutex
	rounds map[uint64]bool
}

func (a *ackSet) add(round uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rounds == nil {
		a.rounds = map[uint64]bool{}
	}
	a.rounds[round] = true
}

func (a *ackSet) take() map[uint64]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.rounds
	a.rounds = nil
	return r
}

// roundDelivery calls accepted once every batch of a round handed to it
// (batch) was accepted; a batch that is not leaves it uncalled.
type roundDelivery struct {
	left     atomic.Int64
	accepted func()
}

// newRoundDelivery starts counting a round's batches; the round's emission
// ends with done, which calls accepted at once when no batch was made.
func newRoundDelivery(accepted func()) *roundDelivery {
	d := &roundDelivery{accepted: accepted}
	d.left.Store(1)
	return d
}

// batch counts one more batch and returns what its acceptance calls.
func (d *roundDelivery) batch() func() {
	if d == nil {
		return nil
	}
	d.left.Add(1)
	return d.done
}

func (d *roundDelivery) done() {
	if d != nil && d.left.Add(-1) == 0 {
		d.accepted()
	}
}

// keepFinal records the final checkpoint of job, finalised by round and
// detached from the store, before the round claims its results. Called with
// mu held.
func (c *core) keepFinal(job *store.Job, round uint64) {
	cp := c.ckpt
	last := cp.sizes[job.ID()]
	value := sealEnvelope(c.store.AppendCheckpoint(beginEnvelope(make([]byte, 0, last+last/8+512)), job), flagFinal)
	cp.finals[job.ID()] = &finalJob{round: round, value: value}
}

// settleFinals adds to ops the final checkpoints not yet written, and to
// gone the jobs whose round was accepted (their checkpoint is deleted); it
// returns the finals it writes. Called with mu held.
func (c *core) settleFinals(ops []*storage.Operation, gone []string) ([]*storage.Operation, []*finalJob, []string) {
	cp := c.ckpt
	accepted := cp.acks.take()
	var writing []*finalJob
	for id, f := range cp.finals {
		switch {
		case accepted[f.round]:
			delete(cp.finals, id)
			if _, stored := cp.saved[id]; stored && c.store.Job(id) == nil {
				gone = append(gone, id)
			}
		case !f.written:
			key := jobKey(id)
			ops = append(ops, storage.SetOperation(key, f.value))
			cp.saved[id] = key
			f.written = true
			writing = append(writing, f)
		}
	}
	return ops, writing, gone
}
