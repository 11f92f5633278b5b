//go:build unix

package output

import "syscall"

// processCPU is the CPU time (user and system, ns) the process has used:
// the benchmarks' figure where a loaded machine inflates the wall time.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
