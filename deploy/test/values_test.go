package deploytest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// processorSettings decodes the collectiveattr block of a collector config.
func processorSettings(t *testing.T, config string) map[string]any {
	t.Helper()
	var doc struct {
		Processors map[string]map[string]any `json:"processors"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(config), &doc))
	require.Contains(t, doc.Processors, "collectiveattr")
	return doc.Processors["collectiveattr"]
}

// TestChartProcessorValues: the collectiveattr values reach the processor
// of either topology as the processor's own keys, in a config merged after
// every other (TestRenderedCollectorConfigsValidate runs the collector's
// validate on these renders).
func TestChartProcessorValues(t *testing.T) {
	for _, tc := range []struct{ topology, configMap string }{{"nodeLocal", "collectiveattr-node-local"}, {"multiNode", "collectiveattr-gateway"}} {
		t.Run(tc.topology, func(t *testing.T) {
			r := index(t, renderAndDecode(t, merge(processorValues(), map[string]any{"topology": tc.topology})))
			got := processorSettings(t, r.configMaps[tc.configMap].Data["processor.yaml"])
			assert.Equal(t, "evidence", got["mode"])
			assert.Equal(t, "high", got["preset"])
			assert.Equal(t, map[string]any{"min_confidence": 0.4}, got["overrides"])
			assert.Equal(t, map[string]any{"baseline_window_ns": float64(6000000000)}, got["evidence"])
			assert.Equal(t, "on_job_end", got["emit"])
			assert.Equal(t, "3s", got["settle_delay"])
			assert.Equal(t, "2m", got["window"])
			assert.Equal(t, "5s", got["evaluation_interval"])
			assert.Equal(t, "15s", got["hidden_peak_interval"])
			assert.Equal(t, map[string]any{"max_jobs": float64(50), "max_events_per_rank": float64(1000000), "max_ranks_per_job": float64(16384)}, got["limits"])
			assert.Equal(t, map[string]any{"host": []any{"k8s.node.name", "host.name"}}, got["identity"])
			assert.NotContains(t, r.configMaps[tc.configMap].Data["processor.yaml"], "e+", "large integers stay integers")

			var workload []string
			for _, w := range r.workloads() {
				if !w.agent {
					workload = w.pod.Spec.Containers[0].Args
				}
			}
			require.NotEmpty(t, workload)
			assert.Equal(t, "--config=/conf/processor.yaml", workload[len(workload)-1], "the values win over every file")
		})
	}
}

// The chart's defaults restate the shipped configs' processor settings, so
// a default install runs what deploy/test and the viewer tests run.
func TestChartProcessorDefaultsMatchTheFiles(t *testing.T) {
	r := index(t, renderAndDecode(t, map[string]any{}))
	rendered := processorSettings(t, r.configMaps["collectiveattr-node-local"].Data["processor.yaml"])
	for _, file := range []string{"node-local.yaml", "gateway.yaml"} {
		for k, v := range processorSettings(t, readChartFile(t, file)) {
			assert.Equal(t, v, rendered[k], "%s: processors.collectiveattr.%s", file, k)
		}
	}
}

// A bad processor value set through the chart is refused by the built
// collector with the processor's own message: the values are not only
// rendered, they are what the collector loads.
func TestChartProcessorValuesReachTheCollector(t *testing.T) {
	for _, tc := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"collectiveattr": map[string]any{"preset": "bogus"}}, "Unknown collective attribution preset: 'bogus'"},
		{map[string]any{"topology": "multiNode", "collectiveattr": map[string]any{"window": "500ms"}}, "window must be >= 1s, got 500ms"},
	} {
		r := index(t, renderAndDecode(t, tc.values))
		for _, w := range r.workloads() {
			if w.agent {
				continue
			}
			args, env := podConfig(t, r, w.pod)
			out, err := runValidate(collectorBinary(t), args, env)
			require.Error(t, err, "%s accepted %v", w.name, tc.values)
			assert.Contains(t, out, tc.want)
		}
	}
}

func TestChartProcessorStorageBelongsToPersistence(t *testing.T) {
	for _, key := range []string{"storage", "checkpoint_interval"} {
		_, err := renderChart(t, map[string]any{"collectiveattr": map[string]any{key: "x"}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "collectiveattr."+key+" is set by the chart: use persistence.enabled")
	}
}

// TestChartResultLogs: result log records go to a rotated file on the
// node by default, or over OTLP; never to the debug exporter.
func TestChartResultLogs(t *testing.T) {
	type pipelines struct {
		Exporters map[string]map[string]any `json:"exporters"`
		Service   struct {
			Pipelines map[string]struct {
				Exporters []string `json:"exporters"`
			} `json:"pipelines"`
		} `json:"service"`
	}
	decode := func(s string) pipelines {
		var p pipelines
		require.NoError(t, yaml.Unmarshal([]byte(s), &p))
		return p
	}

	r := index(t, renderAndDecode(t, map[string]any{}))
	cfg := decode(r.configMaps["collectiveattr-node-local"].Data["result-logs.yaml"])
	assert.Equal(t, []string{"file/results"}, cfg.Service.Pipelines["logs"].Exporters)
	assert.Equal(t, "${env:RESULT_LOGS_PATH}", cfg.Exporters["file/results"]["path"])
	assert.Equal(t, map[string]any{"max_megabytes": float64(100), "max_backups": float64(5)}, cfg.Exporters["file/results"]["rotation"])
	c := r.daemonSets["collectiveattr"].Spec.Template.Spec.Containers[0]
	assert.Equal(t, "/var/log/collectiveattr/results.jsonl", envValue(c, "RESULT_LOGS_PATH"))
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "results", MountPath: "/var/log/collectiveattr"})

	g := index(t, renderAndDecode(t, map[string]any{"topology": "multiNode"}))
	gc := g.statefulSets["collectiveattr-gateway"].Spec.Template.Spec.Containers[0]
	assert.Equal(t, "/var/log/collectiveattr/results-$(POD_NAME).jsonl", envValue(gc, "RESULT_LOGS_PATH"), "one file per gateway pod")
	assert.Equal(t, "metadata.name", envFieldRef(gc, "POD_NAME"))

	o := index(t, renderAndDecode(t, map[string]any{"resultLogs": map[string]any{"exporter": "otlp", "otlp": map[string]any{"endpoint": "loki.logging:4317"}}}))
	cfg = decode(o.configMaps["collectiveattr-node-local"].Data["result-logs.yaml"])
	assert.Equal(t, []string{"otlp/results"}, cfg.Service.Pipelines["logs"].Exporters)
	oc := o.daemonSets["collectiveattr"].Spec.Template.Spec.Containers[0]
	assert.Equal(t, "loki.logging:4317", envValue(oc, "RESULT_LOGS_OTLP_ENDPOINT"))
	for _, vm := range oc.VolumeMounts {
		assert.NotEqual(t, "results", vm.Name, "no file, no volume")
	}

	for values, want := range map[string]map[string]any{
		"resultLogs.exporter otlp needs resultLogs.otlp.endpoint": {"resultLogs": map[string]any{"exporter": "otlp"}},
		`resultLogs.exporter must be file or otlp, got "debug"`:   {"resultLogs": map[string]any{"exporter": "debug"}},
	} {
		_, err := renderChart(t, want)
		require.Error(t, err)
		assert.Contains(t, err.Error(), values)
	}
}

// TestChartDeprecatedModeKey: `mode: multiNode` from an old values file
// still selects the topology, and NOTES says to rename it.
func TestChartDeprecatedModeKey(t *testing.T) {
	old := index(t, renderAndDecode(t, map[string]any{"mode": "multiNode"}))
	current := index(t, renderAndDecode(t, map[string]any{"topology": "multiNode"}))
	assert.Equal(t, keys(current.statefulSets), keys(old.statefulSets))
	assert.Equal(t, keys(current.daemonSets), keys(old.daemonSets))
	assert.Equal(t, current.configMaps, old.configMaps)

	notes := renderNotes(t, map[string]any{"mode": "multiNode"})
	assert.Contains(t, notes, "DEPRECATED: the value `mode: multiNode` sets the topology; rename it to `topology: multiNode`.")
	assert.NotContains(t, renderNotes(t, map[string]any{"topology": "multiNode"}), "DEPRECATED")
}

func TestNotesNameTheRealSettings(t *testing.T) {
	notes := renderNotes(t, map[string]any{"collectiveattr": map[string]any{"mode": "evidence", "preset": "high"}})
	assert.Contains(t, notes, "topology nodeLocal (attribution mode evidence, preset high)")
	assert.True(t, strings.Contains(notes, "/var/log/collectiveattr/results.jsonl"), notes)
}
