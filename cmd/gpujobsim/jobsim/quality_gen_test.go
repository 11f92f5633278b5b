package jobsim

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

func TestQualityCaseRoundTripsThroughJSON(t *testing.T) {
	c, err := GenerateQualityCase("pipeline", 1, DefaultQualityShape(), true)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, WriteEvents(&buf, c.Events))
	back, err := telemetry.ReadJSONL(&buf)
	require.NoError(t, err, "every record passes the strict decoder")
	require.Len(t, back, len(c.Events))
	for i := range back {
		if !assert.Equal(t, c.Events[i], back[i], "event %d", i) {
			break
		}
	}
}
