//go:build !linux

package cpuclock

import "time"

// Thread is the wall time since the process started: where the thread's
// CPU clock is not read, alternating runs still see the same load.
func Thread() time.Duration { return wall() }
