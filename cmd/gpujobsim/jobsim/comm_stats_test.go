package jobsim

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

// NCCL's accounting holds its baseline plus exactly the collective-caused hidden memory.
func TestCommMemoryAt(t *testing.T) {
	s := newScenario(t, func(c *Config) { c.NCCLStats = true })
	var sawSpike, sawUnrelated bool
	for _, in := range s.Injections {
		for _, r := range in.Ranks {
			sp := in.perRank[r]
			mid := (sp.start + sp.end) / 2
			base := s.commBaselineBytes(r)
			assert.Positive(t, base)
			assert.LessOrEqual(t, base, s.Ranks[r].baselineHidden*6/10)
			var permanent int64
			for _, up := range s.Injections {
				if up.Kind == KindStepUp && mid >= up.perRank[r].start {
					permanent = up.PermanentBytes
				}
			}
			switch in.Kind {
			case KindUnrelatedSpike:
				sawUnrelated = true
				assert.Equal(t, base+permanent, s.CommMemoryAt(r, mid), "an unrelated spike is not NCCL's")
			case KindCollectiveSpike:
				sawSpike = true
				assert.Equal(t, base+permanent+sp.size, s.CommMemoryAt(r, mid))
			}
		}
	}
	assert.True(t, sawSpike && sawUnrelated)
}

func TestNCCLStatsOutputs(t *testing.T) {
	run := func(stats bool) []telemetry.Event {
		s := newScenario(t, func(c *Config) { c.NCCLStats = stats })
		var buf bytes.Buffer
		_, err := s.Run(t.Context(), Options{Epoch: testEpoch, Stormlog: &buf})
		require.NoError(t, err)
		events, err := telemetry.ReadJSONL(&buf)
		require.NoError(t, err)
		return events
	}
	without, with := run(false), run(true)
	var rest []telemetry.Event
	stats := 0
	for _, e := range with {
		if e.EventType != CommMemoryStatsEventType {
			rest = append(rest, e)
			continue
		}
		stats++
		assert.False(t, e.HasContext)
		assert.Contains(t, e.Metadata, KeyCommID)
		_, err := e.Metadata[KeyCommMemoryTotal].(json.Number).Int64()
		assert.NoError(t, err)
	}
	samples := 0
	for _, e := range without {
		if e.EventType == "sample" {
			samples++
		}
	}
	assert.Equal(t, samples, stats, "one accounting record per sample")
	assert.Equal(t, without, rest, "the accounting only adds records")
	cfg, err := attribution.ResolveConfig("medium", nil)
	require.NoError(t, err)
	assert.Equal(t, window.AttributeReference(without, cfg, nil), window.AttributeReference(with, cfg, nil),
		"the reference reads the accounting as neither sample nor marker")

	for _, on := range []bool{false, true} {
		s := newScenario(t, func(c *Config) { c.NCCLStats = on })
		md := s.Metrics(0, s.Config.Duration, testEpoch, DeviceFromOTLP)
		found := 0
		for _, rm := range md.ResourceMetrics().All() {
			for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
				if m.Name() != MetricCommMemoryTotal {
					continue
				}
				found++
				assert.Equal(t, "By", m.Unit())
				dp := m.Gauge().DataPoints().At(0)
				id, ok := dp.Attributes().Get(KeyCommID)
				require.True(t, ok)
				assert.Equal(t, s.CommID, id.Str())
			}
		}
		if on {
			assert.Equal(t, 16, found, "one gauge per reporting rank")
		} else {
			assert.Zero(t, found)
		}
	}
}
