//go:build !unix

package output

// processCPU is 0 where the process's CPU time is not read: benchmarks
// then report wall time only.
func processCPU() int64 { return 0 }
