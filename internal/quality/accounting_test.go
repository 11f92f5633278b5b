package quality

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/window"
)

// Communicators split with shared resources report one memory manager's total: what a
// confirmed result says NCCL accounted is the spike's excess once, not once per
// communicator of the manager.
func TestSplitSharedAccountsOnce(t *testing.T) {
	for _, shape := range []string{"default", "wide"} {
		s, ok := jobsim.QualityShapeByName(shape)
		require.True(t, ok)
		c, err := jobsim.GenerateQualityCase("split_shared", 1, s, true)
		require.NoError(t, err)
		cfg, err := evidence.ResolveConfig("medium", nil, nil)
		require.NoError(t, err)
		confirmed := 0
		for _, r := range window.AttributeEvidence(c.Events, cfg, nil) {
			if r.Classification != jobsim.ClassConfirmed || r.NCCLAccountedBytes == nil {
				continue
			}
			confirmed++
			assert.LessOrEqual(t, *r.NCCLAccountedBytes, r.ExcessBytes+r.ExcessBytes/4,
				"%s rank %d at %d: accounted %d for an excess of %d", shape, r.Rank, r.IntervalStartNs, *r.NCCLAccountedBytes, r.ExcessBytes)
		}
		assert.Positive(t, confirmed, shape)
	}
}
