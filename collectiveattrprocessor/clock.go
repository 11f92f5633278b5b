package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import "time"

// clock is the processor's only source of wall-clock time, so that tests can
// drive idle timeouts, identity expiry and evaluation ticks deterministically.
type clock struct {
	now func() time.Time
	// newTicker returns a channel that fires every d and a stop function.
	newTicker func(d time.Duration) (<-chan time.Time, func())
}

func defaultClock() clock {
	return clock{
		now: time.Now,
		newTicker: func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		},
	}
}
