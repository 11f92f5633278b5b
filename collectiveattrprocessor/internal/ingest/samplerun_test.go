package ingest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSamplePointCounters: counters indexes the fields by role, so the
// fields must stay declared in role order.
func TestSamplePointCounters(t *testing.T) {
	var p SamplePoint
	for r := range numRoles {
		p.counters()[r] = 100 + int64(r)
	}
	require.Equal(t, SamplePoint{
		DeviceUsed: 100, DeviceFree: 101, DeviceTotal: 102, AllocatorReserved: 103,
		AllocatorAllocated: 104, AllocatorActive: 105, AllocatorInactive: 106, deviceReserved: 107, processUsed: 108,
	}, p)
}
