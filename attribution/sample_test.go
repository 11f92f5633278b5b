package attribution

import (
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// TestIsSample checks S3's event type test, Python's
// str(event_type).strip().lower() == "sample", and R2's null counters rule.
func TestIsSample(t *testing.T) {
	tests := []struct {
		eventType string
		want      bool
	}{
		{"sample", true},
		{"SAMPLE", true},
		{" Sample\t", true},
		{"\u2003sample\u001f", true}, // Python strips Unicode spaces and U+001C..U+001F
		{"samples", false},
		{"sampl", false},
		{"ſample", false}, // long s: Python's lower() keeps it, Go's EqualFold would fold it
		{"\u212aample", false},
		{"sam ple", false},
		{"", false},
	}
	for _, tt := range tests {
		e := telemetry.Event{EventType: tt.eventType, DeviceUsedBytes: telemetry.Int(1), AllocatorReservedBytes: telemetry.Int(1)}
		if got := IsSample(&e); got != tt.want {
			t.Errorf("IsSample(%q) = %v, want %v", tt.eventType, got, tt.want)
		}
	}
	e := telemetry.Event{EventType: "sample", AllocatorReservedBytes: telemetry.Int(1)}
	if IsSample(&e) {
		t.Error("a sample without device_used_bytes is not usable")
	}
}
