package evidence

import (
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

func event(rank int64, ts int64, eventType string, md map[string]any) telemetry.Event {
	return telemetry.Event{
		SchemaVersion: 3, SessionID: "s", TimestampNs: ts, EventType: eventType, Rank: rank, WorldSize: 4,
		AllocatorReservedBytes: telemetry.Int(10 << 30), DeviceUsedBytes: telemetry.Int(11 << 30),
		DeviceTotalBytes: telemetry.Int(80 << 30), Metadata: md,
	}
}

func TestMedianOf(t *testing.T) {
	for _, tc := range []struct {
		in   []int64
		want int64
	}{
		{[]int64{5}, 5},
		{[]int64{2, 1}, 1},
		{[]int64{3, 1, 2}, 2},
		{[]int64{4, 4, 4, 1, 9, 4}, 4},
		{[]int64{10, -3, 7, 7, 0, 2, 8, 1}, 2},
		{[]int64{1 << 62, -1 << 62, 0}, 0},
	} {
		if got := medianOf(append([]int64(nil), tc.in...)); got != tc.want {
			t.Errorf("medianOf(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
