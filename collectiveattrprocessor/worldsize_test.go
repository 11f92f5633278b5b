package collectiveattrprocessor

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One record declaring a world size far above limits.max_ranks_per_job
// must not become the job's expected world size (issue 32 item 4: before,
// every result of the job dropped from confident to likely). The record
// itself is kept; its world size is not believed.
func TestOneHugeWorldSizeDoesNotBendTheJob(t *testing.T) {
	const s = int64(time.Second)
	t0 := time.Now().Add(-time.Minute).UnixNano() / s * s
	job := jobTraffic{job: "bent", ranks: 4, stepNs: s / 10}
	for k := int64(1); k <= 4; k++ {
		job.spikes = append(job.spikes, t0+k*5*s)
	}
	lines := job.lines(t0, t0+25*s)
	bad := strings.Replace(stormlogLine("bent", 1, 4, t0+25*s, "sample", baselineGap(0)), `"world_size":4`, `"world_size":2199023255552`, 1)
	require.Contains(t, bad, `"world_size":2199023255552`)

	cfg := createDefaultConfig().(*Config)
	cfg.Emit = EmitOnJobEnd
	cfg.Phases = false
	require.NoError(t, cfg.Validate())
	want := processorBodies(t, cfg, lines)
	got := processorBodies(t, cfg, append(lines, bad))
	require.NotEmpty(t, want)
	assert.Equal(t, want, got, "the results with and without the record")
	for _, b := range got {
		assert.Contains(t, b, `"expected_world_size":4`)
	}
}
