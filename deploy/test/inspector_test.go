package deploytest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestNCCLInspectorFeedsTheProcessor: nccl-inspector.yaml, merged over node-local.yaml by
// a second --config (maps merge, lists are replaced), adds its filelog receiver to the
// logs pipeline and keeps that pipeline's receivers and processors, so the Inspector
// records reach the collectiveattr processor that the metrics pipeline shares.
func TestNCCLInspectorFeedsTheProcessor(t *testing.T) {
	type pipeline struct {
		Receivers  []string `json:"receivers"`
		Processors []string `json:"processors"`
	}
	type config struct {
		Receivers  map[string]any            `json:"receivers"`
		Processors map[string]map[string]any `json:"processors"`
		Service    struct {
			Pipelines map[string]pipeline `json:"pipelines"`
		} `json:"service"`
	}
	var base, overlay config
	require.NoError(t, yaml.Unmarshal([]byte(readChartFile(t, "node-local.yaml")), &base))
	require.NoError(t, yaml.Unmarshal([]byte(readChartFile(t, "nccl-inspector.yaml")), &overlay))

	logs := overlay.Service.Pipelines["logs"]
	assert.Contains(t, logs.Receivers, "filelog/nccl_inspector")
	assert.Contains(t, overlay.Receivers, "filelog/nccl_inspector")
	for _, r := range base.Service.Pipelines["logs"].Receivers {
		assert.Contains(t, logs.Receivers, r, "the overlay's receiver list replaces the base's: it must keep every one")
	}
	assert.Nil(t, logs.Processors, "the base's processors stay")
	assert.Contains(t, base.Service.Pipelines["logs"].Processors, "collectiveattr")
	assert.Contains(t, base.Service.Pipelines["metrics"].Processors, "collectiveattr", "one processor state for the gauges and the records")
	assert.Contains(t, overlay.Processors["collectiveattr"], "nccl_inspector")
}
