package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func alertsDir(t testing.TB) string {
	return filepath.Join(repoRoot(t), "deploy", "prometheus")
}

// promtool is Debian's, from the prometheus package (make install-prometheus).
func promtool(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not on PATH: `make install-prometheus` (apt-get install prometheus)")
	}
	return bin
}

// TestAlertRules: the rule file passes `promtool check rules`, and its unit
// tests (each alert firing on a series that should page, quiet on one
// that should not) pass `promtool test rules`.
func TestAlertRules(t *testing.T) {
	bin := promtool(t)
	out := run(t, time.Minute, bin, "check", "rules", filepath.Join(alertsDir(t), "collectiveattr-alerts.yaml"))
	assert.Contains(t, out, "SUCCESS: 6 rules found")
	out = run(t, 2*time.Minute, bin, "test", "rules", filepath.Join(alertsDir(t), "collectiveattr-alerts.test.yaml"))
	assert.Contains(t, out, "SUCCESS")
}

// The unit tests mean something only if promtool fails a rule that does
// not behave: a threshold moved out of reach must fail them.
func TestAlertRuleTestsCatchABrokenRule(t *testing.T) {
	bin := promtool(t)
	dir := t.TempDir()
	rules, err := os.ReadFile(filepath.Join(alertsDir(t), "collectiveattr-alerts.yaml"))
	require.NoError(t, err)
	broken := replaceOnce(t, string(rules), "> 1073741824", "> 10737418240")
	writeFile(t, dir, "collectiveattr-alerts.yaml", broken)
	tests, err := os.ReadFile(filepath.Join(alertsDir(t), "collectiveattr-alerts.test.yaml"))
	require.NoError(t, err)
	path := writeFile(t, dir, "collectiveattr-alerts.test.yaml", string(tests))
	out, err := exec.Command(bin, "test", "rules", path).CombinedOutput()
	require.Error(t, err, "promtool passed a broken rule:\n%s", out)
	assert.Contains(t, string(out), "CollectiveattrNCCLMemoryGrowth")
}

// TestChartPrometheusRule: the chart's PrometheusRule holds exactly the
// tested rule file's groups, carries the operator's selector labels, and
// is off by default (it needs the operator's CRD).
func TestChartPrometheusRule(t *testing.T) {
	plain, err := os.ReadFile(filepath.Join(alertsDir(t), "collectiveattr-alerts.yaml"))
	require.NoError(t, err)
	assert.Equal(t, string(plain), readChartFile(t, "collectiveattr-alerts.yaml")+"\n",
		"deploy/helm/collectiveattr/files/collectiveattr-alerts.yaml must be a copy of deploy/prometheus/collectiveattr-alerts.yaml")
	var want struct {
		Groups []ruleGroup `json:"groups"`
	}
	require.NoError(t, yaml.UnmarshalStrict(plain, &want))

	off := index(t, renderAndDecode(t, map[string]any{}))
	assert.Empty(t, off.promRules)

	for _, topology := range []string{"nodeLocal", "multiNode"} {
		r := index(t, renderAndDecode(t, map[string]any{"topology": topology, "prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "kube-prometheus-stack"}}}))
		pr := r.promRules["collectiveattr"]
		require.NotNil(t, pr, topology)
		assert.Equal(t, "monitoring.coreos.com/v1", pr.APIVersion)
		assert.Equal(t, releaseNamespace, pr.Metadata.Namespace)
		assert.Equal(t, "kube-prometheus-stack", pr.Metadata.Labels["release"])
		assert.Equal(t, want.Groups, pr.Spec.Groups)

		// What the operator hands Prometheus passes promtool too.
		b, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
		require.NoError(t, err)
		path := writeFile(t, t.TempDir(), "rules.yaml", string(b))
		assert.Contains(t, run(t, time.Minute, promtool(t), "check", "rules", path), "SUCCESS: 6 rules found")
	}
}

func replaceOnce(t testing.TB, s, old, new string) string {
	t.Helper()
	require.Equal(t, 1, strings.Count(s, old), "%q", old)
	return strings.Replace(s, old, new, 1)
}

// TestChartPodMonitor: with the Prometheus operator, one PodMonitor
// scrapes both the result metrics and the self-telemetry of exactly the
// collectiveattr pods (not the agents), on ports the pods name.
func TestChartPodMonitor(t *testing.T) {
	assert.Empty(t, index(t, renderAndDecode(t, map[string]any{})).podMonitors, "off by default")
	for _, tc := range []struct{ topology string }{{"nodeLocal"}, {"multiNode"}} {
		r := index(t, renderAndDecode(t, map[string]any{"topology": tc.topology, "podMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "kps"}}}))
		pm := r.podMonitors["collectiveattr"]
		require.NotNil(t, pm, tc.topology)
		assert.Equal(t, "monitoring.coreos.com/v1", pm.APIVersion)
		assert.Equal(t, "kps", pm.Metadata.Labels["release"])
		var collectiveattr []workload
		for _, w := range r.workloads() {
			if !w.agent {
				collectiveattr = append(collectiveattr, w)
			}
		}
		require.Len(t, collectiveattr, 1)
		pod := collectiveattr[0].pod
		assert.Equal(t, pod.Labels, pm.Spec.Selector.MatchLabels)
		ports := map[string]bool{}
		for _, p := range pod.Spec.Containers[0].Ports {
			ports[p.Name] = true
		}
		var scraped []string
		for _, e := range pm.Spec.PodMetricsEndpoints {
			assert.True(t, ports[e.Port], "the pod has a port named %s", e.Port)
			assert.Equal(t, "15s", e.Interval)
			scraped = append(scraped, e.Port)
		}
		assert.Equal(t, []string{"prometheus", "self-metrics"}, scraped)
	}
}
