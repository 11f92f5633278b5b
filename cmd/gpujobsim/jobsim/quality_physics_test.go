package jobsim

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// checkPhysicsFamily checks what a physics family's events and truth must show.
func checkPhysicsFamily(t *testing.T, family string, c *QualityCase, kinds map[string]int) {
	tr := c.Truth
	samples := map[int][]telemetry.Event{}
	for _, e := range c.Events {
		if e.EventType == "sample" {
			samples[int(e.Rank)] = append(samples[int(e.Rank)], e)
		}
	}
	switch family {
	case "restart":
		victims := tr.Params["restarted_ranks"].([]int)
		require.NotEmpty(t, victims)
		for r, ss := range samples {
			sessions := map[string]bool{}
			for _, e := range ss {
				sessions[e.SessionID] = true
			}
			if slices.Contains(victims, r) {
				assert.Len(t, sessions, 2, "a restarted rank's new process is a new session")
			} else {
				assert.Len(t, sessions, 1)
			}
		}
		assert.Equal(t, tr.WorldSize, kinds[KindPersistentCommCreated], "the re-created communicator's first use is a step on every member")
		ids := map[string]bool{}
		aborts := 0
		for _, e := range tr.Collective {
			switch e.Kind {
			case KindPersistentCommCreated:
				ids[e.CommID] = true
			case KindPersistentCommAbort:
				aborts++
				assert.Negative(t, e.Bytes, "an abort is a step down")
				assert.NotContains(t, victims, e.Rank, "on the survivors")
				assert.Equal(t, tr.Comms["world"].ID, e.CommID)
			}
		}
		assert.Len(t, ids, 1)
		assert.Equal(t, tr.WorldSize-len(victims), aborts, "every survivor")
		assert.NotEqual(t, tr.Comms["world"].ID, tr.Comms["world.1"].ID, "re-created with a new id")
	case "small_footprint":
		for _, e := range tr.Collective {
			assert.LessOrEqual(t, e.Bytes, int64(32*mib), "a few pages")
			assert.Zero(t, e.Bytes%pageSz)
		}
		assert.Positive(t, kinds[KindPersistentCommCreated])
	case "other_tenant":
		tenants := 0
		for _, d := range tr.Decoys {
			if d.Kind == KindOtherTenant {
				tenants++
				assert.GreaterOrEqual(t, d.EndNs-d.StartNs, 2*secNs-300*msNs, "a tenant stays for seconds")
				assert.GreaterOrEqual(t, d.Bytes, gib, "and holds GiBs")
			}
		}
		assert.Positive(t, tenants)
	case "host_polling":
		byHost := map[string]map[int64]int{}
		for _, info := range tr.Ranks {
			assert.LessOrEqual(t, info.SamplingHz, 1.0)
		}
		for _, ss := range samples {
			for _, e := range ss {
				if byHost[e.Host] == nil {
					byHost[e.Host] = map[int64]int{}
				}
				byHost[e.Host][e.TimestampNs]++
				assert.GreaterOrEqual(t, e.SamplingIntervalMs, int64(1000))
			}
		}
		for host, at := range byHost {
			for ts, n := range at {
				assert.Greater(t, n, 1, "a host's GPUs are read in one sweep: %s at %d", host, ts)
			}
		}
	case "parallel_3d":
		assert.GreaterOrEqual(t, tr.WorldSize, 64)
		assert.Positive(t, kinds[KindTransientTPAllReduce]+kinds[KindTransientP2P]+kinds[KindTransientAllReduce])
		recompute := 0
		for _, d := range tr.Decoys {
			if d.Kind == KindRecomputeWorkspace {
				recompute++
			}
		}
		assert.Positive(t, recompute)
	}
}

// Creep: hidden memory rises steadily on top of the baseline, never below it.
func TestQualityCreepRises(t *testing.T) {
	for seed := int64(3); seed <= 5; seed++ {
		c, err := GenerateQualityCase("creep", seed, DefaultQualityShape(), false)
		require.NoError(t, err)
		var first, last int64
		for _, e := range c.Events {
			if e.EventType == "sample" && e.Rank == 0 {
				gap := e.DeviceUsedBytes.Value - e.AllocatorReservedBytes.Value
				if first == 0 {
					first = gap
				}
				last = gap
			}
		}
		if c.Truth.Variant == 1 {
			continue // one host only: rank 0 may not leak
		}
		assert.Greater(t, last-first, int64(20*mib), "seed %d: the leak raised rank 0 by tens of MiB", seed)
	}
}
