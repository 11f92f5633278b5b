package attribution

import (
	"math"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// IsSample reports whether an event is a usable sample (§2.3 S3): its
// event_type is "sample" after trimming and lower-casing, and both
// device_used_bytes and allocator_reserved_bytes are known (R2 skips samples
// with either null).
func IsSample(e *telemetry.Event) bool {
	if !e.DeviceUsedBytes.Valid || !e.AllocatorReservedBytes.Valid {
		return false
	}
	return e.EventType == "sample" || isSampleType(telemetry.TrimSpace(e.EventType))
}

// isSampleType is Python's t.lower() == "sample" for a stripped t. No
// character outside ASCII lower-cases (in Python) to an ASCII letter of
// "sample", so the fold is ASCII only: strings.EqualFold would also fold
// U+017F (long s), which Python's lower() leaves as it is.
func isSampleType(t string) bool {
	const want = "sample"
	if len(t) != len(want) {
		return false
	}
	for i := 0; i < len(want); i++ {
		if c := t[i]; c != want[i] && c+('a'-'A') != want[i] {
			return false
		}
	}
	return true
}

// HiddenGap is max(0, used - reserved), saturating instead of wrapping for
// counters the validator would not have let through.
func HiddenGap(used, reserved int64) int64 {
	if used <= reserved {
		return 0
	}
	if reserved < 0 && used > math.MaxInt64+reserved {
		return math.MaxInt64
	}
	return used - reserved
}
