package deploytest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestChartLint(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			assert.Empty(t, lintChart(t, sc.values))
		})
	}
}

func TestChartRejectsUnknownTopology(t *testing.T) {
	_, err := renderChart(t, map[string]any{"topology": "sidecar"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `topology must be nodeLocal or multiNode, got "sidecar"`)

	// The old key given an attribution mode: say where that belongs.
	_, err = renderChart(t, map[string]any{"mode": "evidence"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `mode is the deprecated name of topology (nodeLocal or multiNode), got "evidence": set the attribution mode with collectiveattr.mode`)
}

// The strict decoder is what makes the render tests meaningful: prove that it
// rejects a field the Kubernetes API does not have.
func TestStrictDecodeRejectsUnknownField(t *testing.T) {
	manifest, err := renderChart(t, map[string]any{})
	require.NoError(t, err)
	broken := strings.Replace(manifest, "      containers:\n", "      containers:\n        - bogusField: 1\n          name: x\n          image: x\n", 1)
	require.NotEqual(t, manifest, broken)
	_, err = decodeStrict(broken)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bogusField")
}

// rendered indexes the decoded objects of one render by kind and name.
type rendered struct {
	configMaps   map[string]*corev1.ConfigMap
	daemonSets   map[string]*appsv1.DaemonSet
	statefulSets map[string]*appsv1.StatefulSet
	services     map[string]*corev1.Service
	accounts     map[string]*corev1.ServiceAccount
	roles        map[string]*rbacv1.Role
	roleBindings map[string]*rbacv1.RoleBinding
	clusterRoles map[string]*rbacv1.ClusterRole
	clusterBinds map[string]*rbacv1.ClusterRoleBinding
	promRules    map[string]*prometheusRule
	podMonitors  map[string]*podMonitor
}

func index(t *testing.T, objs []object) rendered {
	t.Helper()
	r := rendered{
		configMaps: map[string]*corev1.ConfigMap{}, daemonSets: map[string]*appsv1.DaemonSet{},
		statefulSets: map[string]*appsv1.StatefulSet{}, services: map[string]*corev1.Service{},
		accounts: map[string]*corev1.ServiceAccount{}, roles: map[string]*rbacv1.Role{},
		roleBindings: map[string]*rbacv1.RoleBinding{}, clusterRoles: map[string]*rbacv1.ClusterRole{},
		clusterBinds: map[string]*rbacv1.ClusterRoleBinding{}, promRules: map[string]*prometheusRule{}, podMonitors: map[string]*podMonitor{},
	}
	for _, o := range objs {
		switch v := o.obj.(type) {
		case *corev1.ConfigMap:
			r.configMaps[v.Name] = v
		case *appsv1.DaemonSet:
			r.daemonSets[v.Name] = v
		case *appsv1.StatefulSet:
			r.statefulSets[v.Name] = v
		case *corev1.Service:
			r.services[v.Name] = v
		case *corev1.ServiceAccount:
			r.accounts[v.Name] = v
		case *rbacv1.Role:
			r.roles[v.Name] = v
		case *rbacv1.RoleBinding:
			r.roleBindings[v.Name] = v
		case *rbacv1.ClusterRole:
			r.clusterRoles[v.Name] = v
		case *rbacv1.ClusterRoleBinding:
			r.clusterBinds[v.Name] = v
		case *prometheusRule:
			r.promRules[v.Metadata.Name] = v
		case *podMonitor:
			r.podMonitors[v.Metadata.Name] = v
		default:
			t.Fatalf("%s: unexpected kind %T", o.source, o.obj)
		}
	}
	return r
}

// workload is a pod template of the render, with the binary its image holds.
type workload struct {
	name  string
	agent bool // built from builder-config-agent.yaml
	pod   corev1.PodTemplateSpec
}

func (r rendered) workloads() []workload {
	var ws []workload
	for name, ds := range r.daemonSets {
		ws = append(ws, workload{name: name, agent: strings.HasSuffix(name, "-agent"), pod: ds.Spec.Template})
	}
	for name, ss := range r.statefulSets {
		ws = append(ws, workload{name: name, pod: ss.Spec.Template})
	}
	slices.SortFunc(ws, func(a, b workload) int { return strings.Compare(a.name, b.name) })
	return ws
}

func keys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestChartNodeLocal(t *testing.T) {
	r := index(t, renderAndDecode(t, map[string]any{}))

	assert.Equal(t, []string{"collectiveattr"}, keys(r.daemonSets))
	assert.Empty(t, r.statefulSets)
	assert.Empty(t, r.roles, "no gateway resolver in node-local mode")
	ds := r.daemonSets["collectiveattr"]
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]

	assertGPUNodePlacement(t, pod)
	assertCollectorContainer(t, c)
	assert.Equal(t, ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels)

	// OTLP through the node-local Service, no host ports (TestChartOTLPPorts).
	for _, p := range c.Ports {
		assert.Zero(t, p.HostPort, "port %s", p.Name)
	}

	// stormlog JSONL from the node, read-only.
	var hostPath string
	for _, v := range pod.Volumes {
		if v.Name == "stormlog" && v.HostPath != nil {
			hostPath = v.HostPath.Path
		}
	}
	assert.Equal(t, "/var/log/stormlog", hostPath)
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "stormlog", MountPath: "/var/log/stormlog", ReadOnly: true})
	assert.Equal(t, "/var/log/stormlog/*.jsonl", envValue(c, "STORMLOG_GLOB"))

	// Node-local DCGM discovery: the scrape's field selector names this node.
	assert.Equal(t, "spec.nodeName", envFieldRef(c, "K8S_NODE_NAME"))
	assert.Equal(t, []string{"--config=/conf/node-local.yaml", "--config=/conf/dcgm-scrape.yaml", "--config=/conf/result-logs.yaml", "--config=/conf/processor.yaml"}, c.Args)
	require.Contains(t, r.clusterRoles, "collectiveattr-pod-discovery")
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
		r.clusterRoles["collectiveattr-pod-discovery"].Rules)
	assertBoundTo(t, r.clusterBinds["collectiveattr-pod-discovery"].Subjects, pod.ServiceAccountName)
	assert.Contains(t, r.accounts, pod.ServiceAccountName)

	assert.Equal(t, "true", ds.Spec.Template.Annotations["prometheus.io/scrape"])
	assert.Equal(t, "8889", ds.Spec.Template.Annotations["prometheus.io/port"])
	assertConfigMapsAreTheTestedFiles(t, r)
}

func TestChartNodeLocalNCCLInspector(t *testing.T) {
	off := index(t, renderAndDecode(t, map[string]any{}))
	offPod := off.daemonSets["collectiveattr"].Spec.Template.Spec
	for _, v := range offPod.Volumes {
		assert.NotEqual(t, "nccl-inspector", v.Name, "off by default")
	}
	assert.NotContains(t, off.configMaps["collectiveattr-node-local"].Data, "nccl-inspector.yaml")

	r := index(t, renderAndDecode(t, map[string]any{"ncclInspector": map[string]any{"enabled": true, "hostPath": "/scratch/nccl"}}))
	pod := r.daemonSets["collectiveattr"].Spec.Template.Spec
	c := pod.Containers[0]
	assert.Equal(t, []string{"--config=/conf/node-local.yaml", "--config=/conf/dcgm-scrape.yaml", "--config=/conf/nccl-inspector.yaml", "--config=/conf/result-logs.yaml", "--config=/conf/processor.yaml"}, c.Args)
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "nccl-inspector", MountPath: "/var/log/nccl-inspector", ReadOnly: true})
	var hostPath string
	for _, v := range pod.Volumes {
		if v.Name == "nccl-inspector" && v.HostPath != nil {
			hostPath = v.HostPath.Path
		}
	}
	assert.Equal(t, "/scratch/nccl", hostPath)
	assert.Equal(t, "/var/log/nccl-inspector/*.log", envValue(c, "NCCL_INSPECTOR_GLOB"))
	assert.Equal(t, "end", envValue(c, "NCCL_INSPECTOR_START_AT"))
	assertConfigMapsAreTheTestedFiles(t, r)

	_, err := renderChart(t, map[string]any{"topology": "multiNode", "ncclInspector": map[string]any{"enabled": true}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ncclInspector.enabled needs topology nodeLocal")
}

func TestChartNodeLocalWithoutDCGM(t *testing.T) {
	r := index(t, renderAndDecode(t, map[string]any{"dcgm": map[string]any{"enabled": false}}))
	c := r.daemonSets["collectiveattr"].Spec.Template.Spec.Containers[0]
	assert.Equal(t, []string{"--config=/conf/node-local.yaml", "--config=/conf/result-logs.yaml", "--config=/conf/processor.yaml"}, c.Args)
	assert.Empty(t, r.clusterRoles, "no pod discovery, no cluster-wide read")
	assert.NotContains(t, r.configMaps["collectiveattr-node-local"].Data, "dcgm-scrape.yaml")
}

func TestChartMultiNode(t *testing.T) {
	for _, resolver := range []string{"k8s", "dns"} {
		t.Run(resolver, func(t *testing.T) {
			r := index(t, renderAndDecode(t, map[string]any{
				"topology": "multiNode",
				"gateway":  map[string]any{"resolver": resolver, "replicas": 3},
			}))
			assert.Equal(t, []string{"collectiveattr-agent"}, keys(r.daemonSets))
			assert.Equal(t, []string{"collectiveattr-gateway"}, keys(r.statefulSets))

			agent := r.daemonSets["collectiveattr-agent"].Spec.Template.Spec
			gw := r.statefulSets["collectiveattr-gateway"]
			assertGPUNodePlacement(t, agent)
			assertCollectorContainer(t, agent.Containers[0])
			assertCollectorContainer(t, gw.Spec.Template.Spec.Containers[0])
			assert.Equal(t, "collectiveattr/otelcol-collectiveattr-agent:0.1.0", agent.Containers[0].Image)
			assert.Equal(t, "collectiveattr/otelcol-collectiveattr:0.1.0", gw.Spec.Template.Spec.Containers[0].Image)
			assert.Equal(t, int32(3), *gw.Spec.Replicas)

			// The agents resolve the gateways through a headless Service that
			// selects exactly the gateway pods and is the StatefulSet's
			// governing Service.
			svc := r.services["collectiveattr-gateway"]
			require.NotNil(t, svc)
			assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP)
			assert.Equal(t, svc.Name, gw.Spec.ServiceName)
			assert.Equal(t, gw.Spec.Selector.MatchLabels, svc.Spec.Selector)
			assert.Equal(t, gw.Spec.Template.Labels, svc.Spec.Selector)
			assert.NotEqual(t, r.daemonSets["collectiveattr-agent"].Spec.Selector.MatchLabels, svc.Spec.Selector)
			ac := agent.Containers[0]
			assert.Equal(t, "collectiveattr-gateway."+releaseNamespace, envValue(ac, "GATEWAY_SERVICE"))
			assert.Contains(t, ac.Args, "--config=/conf/resolver.yaml")
			assert.Equal(t, readChartFile(t, "agent-resolver-"+resolver+".yaml"), r.configMaps["collectiveattr-agent"].Data["resolver.yaml"])

			if resolver == "k8s" {
				role := r.roles["collectiveattr-gateway-resolver"]
				require.NotNil(t, role)
				assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}}}, role.Rules)
				assertBoundTo(t, r.roleBindings["collectiveattr-gateway-resolver"].Subjects, agent.ServiceAccountName)
			} else {
				assert.Empty(t, r.roles, "the DNS resolver needs no API access")
			}
			assertConfigMapsAreTheTestedFiles(t, r)
		})
	}
}

func assertGPUNodePlacement(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	assert.Equal(t, map[string]string{"nvidia.com/gpu.present": "true"}, pod.NodeSelector)
	assert.Contains(t, pod.Tolerations, corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
}

// assertCollectorContainer checks what every collector container needs:
// probes on the health_check extension's port, requests and a memory limit
// (memory_limiter works from it), a non-root read-only container.
func assertCollectorContainer(t *testing.T, c corev1.Container) {
	t.Helper()
	var healthPort int32
	for _, p := range c.Ports {
		if p.Name == "health" {
			healthPort = p.ContainerPort
		}
	}
	assert.NotZero(t, healthPort)
	assert.Equal(t, strconv.Itoa(int(healthPort)), envValue(c, "HEALTH_CHECK_PORT"), "health_check listens where the probes look")
	for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		require.NotNil(t, probe)
		require.NotNil(t, probe.HTTPGet)
		assert.Equal(t, "health", probe.HTTPGet.Port.String())
		assert.Equal(t, "/", probe.HTTPGet.Path)
	}
	assert.False(t, c.Resources.Requests.Cpu().IsZero())
	assert.False(t, c.Resources.Requests.Memory().IsZero())
	assert.False(t, c.Resources.Limits.Memory().IsZero())
	require.NotNil(t, c.SecurityContext)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	assert.Equal(t, "status.podIP", envFieldRef(c, "POD_IP"))
}

func assertBoundTo(t *testing.T, subjects []rbacv1.Subject, account string) {
	t.Helper()
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: account, Namespace: releaseNamespace}}, subjects)
}

// assertConfigMapsAreTheTestedFiles: every config in a ConfigMap is a file
// under files/, byte for byte, so validating the files validates what runs.
func assertConfigMapsAreTheTestedFiles(t *testing.T, r rendered) {
	t.Helper()
	for name, cm := range r.configMaps {
		for key, data := range cm.Data {
			file := key
			switch key {
			case "resolver.yaml":
				continue // checked per resolver by the caller
			case "processor.yaml", "result-logs.yaml":
				continue // rendered from values (values_test.go)
			}
			assert.Equal(t, readChartFile(t, file), data, "ConfigMap %s key %s", name, key)
		}
	}
}

func readChartFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir(t), "files", name))
	require.NoError(t, err)
	return strings.TrimRight(string(b), "\n")
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func envFieldRef(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			return e.ValueFrom.FieldRef.FieldPath
		}
	}
	return ""
}
