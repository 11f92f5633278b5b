// Package cpuclock reads the CPU time of the calling OS thread, for
// benchmarks that compare two paths run alternately: on a loaded machine the
// wall time of each includes the time other processes ran, the thread's CPU
// time does not. Callers lock the goroutine to its thread
// (runtime.LockOSThread) for as long as they read it.
package cpuclock
