// Package parallel spreads independent per-item work (a job's ranks) over
// a few goroutines. Each item writes only its own slot of the caller's
// output, so the output is the same, in the same order, whatever the
// number of workers.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Workers is the number of goroutines For uses by default: GOMAXPROCS,
// the cores the process may run on.
func Workers() int { return runtime.GOMAXPROCS(0) }

// chunksPerWorker is how many pieces each worker's share is cut into:
// ranks differ in cost (a spiking rank computes statistics a quiet one
// skips), so workers that finish early take the next piece instead of
// waiting for the slowest share.
const chunksPerWorker = 8

// For calls work(worker, i) once for every i in [0, n), on at most
// workers goroutines (the caller's own included), and returns when every
// call has returned. worker, in [0, workers), names the goroutine a call
// runs on, so that each may own scratch space: calls with the same worker
// never overlap. With workers ≤ 1 or n ≤ 1 every call runs on the
// caller's goroutine, in order.
func For(n, workers int, work func(worker, i int)) {
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			work(0, i)
		}
		return
	}
	chunk := max(1, n/(workers*chunksPerWorker))
	var next atomic.Int64
	run := func(worker int) {
		for {
			hi := int(next.Add(int64(chunk)))
			lo := hi - chunk
			if lo >= n {
				return
			}
			for i := lo; i < min(hi, n); i++ {
				work(worker, i)
			}
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { run(w) })
	}
	run(0)
	wg.Wait()
}
