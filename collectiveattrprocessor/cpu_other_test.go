//go:build !unix

package collectiveattrprocessor

import "time"

// processCPU is 0 where the process's CPU time is not read: benchmarks
// then report wall time only.
func processCPU() time.Duration { return 0 }
