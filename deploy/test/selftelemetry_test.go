package deploytest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

var processorSelfMetric = regexp.MustCompile(`otelcol_processor_collectiveattr_[a-z_]+`)

// TestSelfTelemetryNames: every processor self-metric the dashboard and
// the alert rules use is one the processor declares (metadata.yaml), under
// the name the collector's Prometheus exporter gives it: otelcol_ prefix,
// _total on sums, _bucket/_sum/_count on histograms, no unit suffix. The
// live scrape in TestDashboardQueriesAnsweredByExporter shows the rule on
// the metrics a healthy collector has; this covers the ones only a
// failure creates (emit_failures).
func TestSelfTelemetryNames(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "collectiveattrprocessor", "metadata.yaml"))
	require.NoError(t, err)
	var md struct {
		Telemetry struct {
			Metrics map[string]struct {
				Sum       map[string]any `json:"sum"`
				Gauge     map[string]any `json:"gauge"`
				Histogram map[string]any `json:"histogram"`
			} `json:"metrics"`
		} `json:"telemetry"`
	}
	require.NoError(t, yaml.Unmarshal(b, &md))
	declared := map[string]bool{}
	for name, m := range md.Telemetry.Metrics {
		prom := "otelcol_" + name
		switch {
		case m.Sum != nil:
			declared[prom+"_total"] = true
		case m.Histogram != nil:
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				declared[prom+suffix] = true
			}
		default:
			declared[prom] = true
		}
	}

	var used []string
	for _, q := range loadDashboard(t).queries(t) {
		used = append(used, processorSelfMetric.FindAllString(q.expr, -1)...)
	}
	rules, err := os.ReadFile(filepath.Join(alertsDir(t), "collectiveattr-alerts.yaml"))
	require.NoError(t, err)
	used = append(used, processorSelfMetric.FindAllString(string(rules), -1)...)
	slices.Sort(used)
	used = slices.Compact(used)
	require.NotEmpty(t, used)
	for _, name := range used {
		assert.True(t, declared[name], "%s is not a self-metric of metadata.yaml (declared: %s)", name, strings.Join(sortedKeys(declared), ", "))
	}
	assert.Contains(t, used, "otelcol_processor_collectiveattr_emit_failures_total")
}

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
