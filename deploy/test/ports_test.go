package deploytest

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestChartOTLPPorts: training pods reach the collector (node-local) or
// agent (multi-node) on their own node through a Service with
// internalTrafficPolicy Local; host ports, which collide with an OTel
// agent DaemonSet on 4317/4318, only on request.
func TestChartOTLPPorts(t *testing.T) {
	for _, tc := range []struct {
		topology, workload, component string
	}{{"nodeLocal", "collectiveattr", "node-local"}, {"multiNode", "collectiveattr-agent", "agent"}} {
		t.Run(tc.topology, func(t *testing.T) {
			r := index(t, renderAndDecode(t, map[string]any{"topology": tc.topology}))
			ds := r.daemonSets[tc.workload]
			require.NotNil(t, ds)
			c := ds.Spec.Template.Spec.Containers[0]
			containerPorts := map[string]int32{}
			for _, p := range c.Ports {
				containerPorts[p.Name] = p.ContainerPort
				assert.Zero(t, p.HostPort, "no host port by default: %s", p.Name)
			}
			svc := r.services["collectiveattr-otlp"]
			require.NotNil(t, svc)
			require.NotNil(t, svc.Spec.InternalTrafficPolicy)
			assert.Equal(t, corev1.ServiceInternalTrafficPolicyLocal, *svc.Spec.InternalTrafficPolicy)
			assert.Equal(t, ds.Spec.Template.Labels, svc.Spec.Selector, "the Service selects exactly the %s pods", tc.component)
			ports := map[int32]intstr.IntOrString{}
			for _, p := range svc.Spec.Ports {
				ports[p.Port] = p.TargetPort
			}
			assert.Equal(t, map[int32]intstr.IntOrString{4317: intstr.FromString("otlp-grpc"), 4318: intstr.FromString("otlp-http")}, ports)
			assert.Equal(t, int32(4317), containerPorts["otlp-grpc"])
			assert.Equal(t, int32(4318), containerPorts["otlp-http"])
			assert.Equal(t, "4317", envValue(c, "OTLP_GRPC_PORT"))
			assert.Equal(t, "4318", envValue(c, "OTLP_HTTP_PORT"))

			on := index(t, renderAndDecode(t, map[string]any{"topology": tc.topology, "otlp": map[string]any{"hostPort": true}}))
			hostPorts := map[string]int32{}
			for _, p := range on.daemonSets[tc.workload].Spec.Template.Spec.Containers[0].Ports {
				hostPorts[p.Name] = p.HostPort
			}
			assert.Equal(t, map[string]int32{"otlp-grpc": 4317, "otlp-http": 4318, "health": 0, "self-metrics": 0, "prometheus": 0}, filterPorts(hostPorts))

			off := index(t, renderAndDecode(t, map[string]any{"topology": tc.topology, "otlp": map[string]any{"service": map[string]any{"enabled": false}}}))
			assert.NotContains(t, off.services, "collectiveattr-otlp")
		})
	}
}

// filterPorts keeps the ports a workload has (the agent has no prometheus
// port: the entry is dropped when absent).
func filterPorts(m map[string]int32) map[string]int32 {
	if _, ok := m["prometheus"]; !ok {
		m["prometheus"] = 0
	}
	return m
}

// otlpEndpoint matches an OTLP endpoint a reader is told to set.
var otlpEndpoint = regexp.MustCompile(`OTEL_EXPORTER_OTLP_ENDPOINT=http://([^\s:]+):(\d+)`)

// TestOTLPEndpointsAgree: NOTES and docs/deployment.md give training pods
// the same endpoint: the OTLP/HTTP port (4318), as OTEL_EXPORTER_OTLP_ENDPOINT
// with the SDKs' default http/protobuf protocol wants.
func TestOTLPEndpointsAgree(t *testing.T) {
	notes := renderNotes(t, map[string]any{"otlp": map[string]any{"hostPort": true}})
	docs, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "deployment.md"))
	require.NoError(t, err)
	for name, text := range map[string]string{"NOTES.txt": notes, "docs/deployment.md": string(docs)} {
		found := otlpEndpoint.FindAllStringSubmatch(text, -1)
		require.NotEmpty(t, found, name)
		hosts := map[string]bool{}
		for _, m := range found {
			assert.Equal(t, "4318", m[2], "%s: %s is not the OTLP/HTTP port", name, m[0])
			hosts[m[1]] = true
		}
		assert.True(t, hosts["collectiveattr-otlp."+releaseNamespace+".svc"], "%s names the node-local Service: %v", name, hosts)
	}
}
