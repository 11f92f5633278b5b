package parallel

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestForCallsEachItemOnceOnItsWorker: every item is done exactly once,
// by a worker in range, and no two calls with one worker overlap (each
// worker's counter is only ever entered by one call at a time).
func TestForCallsEachItemOnceOnItsWorker(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{0, 4}, {1, 4}, {5, 1}, {7, 3}, {1000, 4}, {3, 8}} {
		done := make([]atomic.Int32, tc.n)
		busy := make([]atomic.Int32, max(tc.workers, 1))
		For(tc.n, tc.workers, func(w, i int) {
			if w < 0 || w >= max(tc.workers, 1) {
				t.Errorf("n=%d workers=%d: worker %d out of range", tc.n, tc.workers, w)
				return
			}
			if busy[w].Add(1) != 1 {
				t.Errorf("n=%d workers=%d: two calls on worker %d at once", tc.n, tc.workers, w)
			}
			done[i].Add(1)
			busy[w].Add(-1)
		})
		for i := range done {
			if got := done[i].Load(); got != 1 {
				t.Errorf("n=%d workers=%d: item %d done %d times", tc.n, tc.workers, i, got)
			}
		}
	}
}

// TestForOneWorkerRunsInOrder: one worker is the plain loop, in order.
func TestForOneWorkerRunsInOrder(t *testing.T) {
	var got []int
	For(5, 1, func(w, i int) {
		if w != 0 {
			t.Errorf("worker %d, want 0", w)
		}
		got = append(got, i)
	})
	for i, v := range got {
		if v != i {
			t.Fatalf("order %v, want 0..4", got)
		}
	}
	if len(got) != 5 {
		t.Fatalf("got %d calls, want 5", len(got))
	}
}

// TestForUsesSeveralGoroutines: with several workers and blocking items,
// the items overlap: on one goroutine the first item would wait for ever
// for the second, so the test gives up after a bound.
func TestForUsesSeveralGoroutines(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	var entered atomic.Int32
	go func() {
		For(2, 2, func(_, _ int) {
			if entered.Add(1) == 2 {
				close(started)
			}
			<-release
		})
	}()
	defer close(release)
	select {
	case <-started: // both items are running at once
	case <-time.After(10 * time.Second):
		t.Fatal("the two items never ran at the same time")
	}
}
