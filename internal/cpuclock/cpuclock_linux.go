package cpuclock

import (
	"time"

	"golang.org/x/sys/unix"
)

// Thread is the CPU time the calling thread has used.
func Thread() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return wall()
	}
	return time.Duration(ts.Nano())
}
