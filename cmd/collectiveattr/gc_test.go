package main

import (
	"runtime/debug"
	"testing"
)

// The CLI collects at GOGC=25 from a floor of gcFloorBytes unless the
// environment sets GOGC, which the runtime has already applied and the
// CLI leaves alone.
func TestSetGCPercent(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	for _, tt := range []struct {
		gogc string
		want int
	}{{"100", 100}, {"off", 100}, {"", heldHeapGCPercent}} {
		debug.SetGCPercent(100)
		gcFloor = nil
		setGCPercent(func(k string) string {
			if k == "GOGC" {
				return tt.gogc
			}
			return ""
		})
		if got := debug.SetGCPercent(100); got != tt.want {
			t.Errorf("GOGC=%q: GC percent %d, want %d", tt.gogc, got, tt.want)
		}
		if floor := tt.gogc == ""; (len(gcFloor) == gcFloorBytes) != floor {
			t.Errorf("GOGC=%q: floor of %d bytes, want one: %v", tt.gogc, len(gcFloor), floor)
		}
	}
}
