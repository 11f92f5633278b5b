//go:build !linux

package collectiveattrprocessor

import "time"

// threadCPU is 0 where a thread's CPU time is not read.
func threadCPU() time.Duration { return 0 }
