package collectiveattrprocessor

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time (user and system) the calling OS thread has
// used: with the goroutine locked to its thread, what a section of code
// cost, without the time the machine's other processes took the core.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
