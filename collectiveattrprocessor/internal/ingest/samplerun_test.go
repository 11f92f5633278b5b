package ingest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSamplePointCounters: setCounters puts each role's value in its
// field, and leaves the roles that only help form a sample out.
func TestSamplePointCounters(t *testing.T) {
	var v [numRoles]int64
	for r := range numRoles {
		v[r] = 100 + int64(r)
	}
	var p SamplePoint
	p.setCounters(&v)
	require.Equal(t, SamplePoint{
		DeviceUsed: 100, DeviceFree: 101, DeviceTotal: 102, AllocatorReserved: 103,
		AllocatorAllocated: 104, AllocatorActive: 105, AllocatorInactive: 106,
	}, p)
}
