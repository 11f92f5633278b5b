package cpuclock

import (
	"runtime"
	"testing"
	"time"
)

// A thread that spins for a while has used about that much CPU; one that
// sleeps has used almost none.
func TestThreadCountsOnlyThisThreadsCPU(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	t0 := Thread()
	time.Sleep(50 * time.Millisecond)
	slept := Thread() - t0
	if slept > 20*time.Millisecond {
		t.Errorf("sleeping 50ms used %v of CPU", slept)
	}

	t1 := Thread()
	for deadline := time.Now().Add(30 * time.Millisecond); time.Now().Before(deadline); {
	}
	spun := Thread() - t1
	if spun <= 0 || spun > 31*time.Millisecond {
		t.Errorf("spinning 30ms used %v of CPU", spun)
	}
}
