package deploytest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// TestChartPersistence: persistence.enabled merges persistence.yaml (the
// file_storage extension and the processor's storage key) into the
// collectiveattr collector of either mode and mounts its directory: a
// hostPath by default, an emptyDir without one. Off by default.
func TestChartPersistence(t *testing.T) {
	off := index(t, renderAndDecode(t, map[string]any{}))
	offPod := off.daemonSets["collectiveattr"].Spec.Template.Spec
	assert.NotContains(t, offPod.Containers[0].Args, "--config=/conf/persistence.yaml", "off by default")
	assert.NotContains(t, off.configMaps["collectiveattr-node-local"].Data, "persistence.yaml")

	mount := corev1.VolumeMount{Name: "persistence", MountPath: "/var/lib/collectiveattr"}
	volume := func(pod corev1.PodSpec) *corev1.Volume {
		for i := range pod.Volumes {
			if pod.Volumes[i].Name == "persistence" {
				return &pod.Volumes[i]
			}
		}
		return nil
	}

	r := index(t, renderAndDecode(t, map[string]any{"persistence": map[string]any{"enabled": true, "hostPath": "/scratch/ca", "checkpointInterval": "3s"}}))
	pod := r.daemonSets["collectiveattr"].Spec.Template.Spec
	c := pod.Containers[0]
	assert.Equal(t, []string{"--config=/conf/persistence.yaml", "--config=/conf/result-logs.yaml", "--config=/conf/processor.yaml"}, c.Args[len(c.Args)-3:],
		"persistence on top of the base files, the values last")
	assert.Contains(t, c.VolumeMounts, mount)
	v := volume(pod)
	require.NotNil(t, v)
	require.NotNil(t, v.HostPath)
	assert.Equal(t, "/scratch/ca", v.HostPath.Path)
	assert.Equal(t, "3s", envValue(c, "CHECKPOINT_INTERVAL"))
	assert.Contains(t, r.configMaps["collectiveattr-node-local"].Data, "persistence.yaml")
	assertConfigMapsAreTheTestedFiles(t, r)

	e := index(t, renderAndDecode(t, map[string]any{"persistence": map[string]any{"enabled": true, "hostPath": ""}}))
	v = volume(e.daemonSets["collectiveattr"].Spec.Template.Spec)
	require.NotNil(t, v)
	assert.NotNil(t, v.EmptyDir, "no hostPath: an emptyDir")

	// Gateways: a claim per replica, mounted where the collector writes.
	g := index(t, renderAndDecode(t, map[string]any{"topology": "multiNode", "persistence": map[string]any{
		"enabled": true, "gateway": map[string]any{"size": "20Gi", "storageClassName": "fast-ssd"}}}))
	ss := g.statefulSets["collectiveattr-gateway"]
	gpod := ss.Spec.Template.Spec
	assert.Equal(t, []string{"--config=/conf/gateway.yaml", "--config=/conf/persistence.yaml", "--config=/conf/result-logs.yaml", "--config=/conf/processor.yaml"}, gpod.Containers[0].Args)
	assert.Contains(t, gpod.Containers[0].VolumeMounts, mount)
	assert.Nil(t, volume(gpod), "the volume comes from the claim template, not the pod")
	require.Len(t, ss.Spec.VolumeClaimTemplates, 1)
	pvc := ss.Spec.VolumeClaimTemplates[0]
	assert.Equal(t, "persistence", pvc.Name)
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, pvc.Spec.AccessModes)
	assert.Equal(t, "20Gi", pvc.Spec.Resources.Requests.Storage().String())
	require.NotNil(t, pvc.Spec.StorageClassName)
	assert.Equal(t, "fast-ssd", *pvc.Spec.StorageClassName)
	// fsGroup gives the claim's volume to the collector's group; only when
	// its root does not match yet.
	require.NotNil(t, gpod.SecurityContext.FSGroup)
	assert.Equal(t, int64(65532), *gpod.SecurityContext.FSGroup)
	require.NotNil(t, gpod.SecurityContext.FSGroupChangePolicy)
	assert.Equal(t, corev1.FSGroupChangeOnRootMismatch, *gpod.SecurityContext.FSGroupChangePolicy)
	assert.Equal(t, "10s", envValue(gpod.Containers[0], "CHECKPOINT_INTERVAL"))
	assertConfigMapsAreTheTestedFiles(t, g)

	noClass := index(t, renderAndDecode(t, map[string]any{"topology": "multiNode", "persistence": map[string]any{"enabled": true}}))
	assert.Nil(t, noClass.statefulSets["collectiveattr-gateway"].Spec.VolumeClaimTemplates[0].Spec.StorageClassName, "the cluster's default StorageClass")
	gwOff := index(t, renderAndDecode(t, map[string]any{"topology": "multiNode"}))
	assert.Empty(t, gwOff.statefulSets["collectiveattr-gateway"].Spec.VolumeClaimTemplates)
}

// TestChartHostPathOwnership: kubelet creates a missing hostPath directory
// owned by root and fsGroup does not apply to hostPath, so an init
// container gives each hostPath the collector writes to UID 65532 (and
// only those: the read-only stormlog mount stays as it is).
func TestChartHostPathOwnership(t *testing.T) {
	r := index(t, renderAndDecode(t, map[string]any{"persistence": map[string]any{"enabled": true}}))
	pod := r.daemonSets["collectiveattr"].Spec.Template.Spec
	require.Len(t, pod.InitContainers, 1)
	ic := pod.InitContainers[0]
	assert.Equal(t, []string{"sh", "-c", "chown 65532:65532 /mnt/persistence /mnt/results"}, ic.Command)
	assert.ElementsMatch(t, []corev1.VolumeMount{{Name: "persistence", MountPath: "/mnt/persistence"}, {Name: "results", MountPath: "/mnt/results"}}, ic.VolumeMounts)
	hostPaths := map[string]string{}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	assert.Equal(t, "/var/lib/collectiveattr", hostPaths["persistence"])
	assert.Equal(t, "/var/log/collectiveattr", hostPaths["results"])
	// Root with CAP_CHOWN only, nothing else.
	sc := ic.SecurityContext
	require.NotNil(t, sc)
	assert.Equal(t, int64(0), *sc.RunAsUser)
	assert.False(t, *sc.RunAsNonRoot)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Equal(t, []corev1.Capability{"CHOWN"}, sc.Capabilities.Add)
	// The collector itself stays non-root.
	assert.Equal(t, int64(65532), *pod.SecurityContext.RunAsUser)
	assert.Nil(t, pod.Containers[0].SecurityContext.RunAsUser)

	// A custom UID is what the init container hands the directories to.
	uid := index(t, renderAndDecode(t, map[string]any{"podSecurityContext": map[string]any{"runAsUser": 1234, "runAsGroup": 1235}}))
	assert.Equal(t, []string{"sh", "-c", "chown 1234:1235 /mnt/results"}, uid.daemonSets["collectiveattr"].Spec.Template.Spec.InitContainers[0].Command)

	// No hostPath to write (emptyDir persistence, OTLP result logs), or
	// the operator prepares the directories: no init container.
	for _, values := range []map[string]any{
		{"persistence": map[string]any{"enabled": true, "hostPath": ""}, "resultLogs": map[string]any{"exporter": "otlp", "otlp": map[string]any{"endpoint": "logs:4317"}}},
		{"volumePermissions": map[string]any{"enabled": false}},
	} {
		n := index(t, renderAndDecode(t, values))
		assert.Empty(t, n.daemonSets["collectiveattr"].Spec.Template.Spec.InitContainers, "%v", values)
	}
	// Gateways: only the result log hostPath (the claim is fsGroup's).
	g := index(t, renderAndDecode(t, map[string]any{"topology": "multiNode", "persistence": map[string]any{"enabled": true}}))
	gic := g.statefulSets["collectiveattr-gateway"].Spec.Template.Spec.InitContainers
	require.Len(t, gic, 1)
	assert.Equal(t, []string{"sh", "-c", "chown 65532:65532 /mnt/results"}, gic[0].Command)
	assert.Empty(t, g.daemonSets["collectiveattr-agent"].Spec.Template.Spec.InitContainers, "the agent writes nothing")
}

// TestChartGatewayAntiAffinity: gateways spread over nodes, preferred by
// default, required or off on request; an explicit affinity wins.
func TestChartGatewayAntiAffinity(t *testing.T) {
	selector := map[string]string{
		"app.kubernetes.io/name": "collectiveattr", "app.kubernetes.io/instance": releaseName, "app.kubernetes.io/component": "gateway",
	}
	gatewayPod := func(gw map[string]any) corev1.PodSpec {
		r := index(t, renderAndDecode(t, map[string]any{"topology": "multiNode", "gateway": gw}))
		ss := r.statefulSets["collectiveattr-gateway"]
		assert.Equal(t, ss.Spec.Selector.MatchLabels, selector)
		return ss.Spec.Template.Spec
	}
	soft := gatewayPod(map[string]any{})
	require.NotNil(t, soft.Affinity)
	pref := soft.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	require.Len(t, pref, 1)
	assert.Equal(t, "kubernetes.io/hostname", pref[0].PodAffinityTerm.TopologyKey)
	assert.Equal(t, selector, pref[0].PodAffinityTerm.LabelSelector.MatchLabels)
	assert.Empty(t, soft.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution)

	hard := gatewayPod(map[string]any{"podAntiAffinity": "hard"})
	req := hard.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	require.Len(t, req, 1)
	assert.Equal(t, "kubernetes.io/hostname", req[0].TopologyKey)
	assert.Equal(t, selector, req[0].LabelSelector.MatchLabels)

	assert.Nil(t, gatewayPod(map[string]any{"podAntiAffinity": "none"}).Affinity)
	zone := map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
		"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "zone", "operator": "In", "values": []any{"a"}}}}}}}}
	own := gatewayPod(map[string]any{"affinity": zone})
	assert.Nil(t, own.Affinity.PodAntiAffinity, "an explicit affinity replaces the default")
	assert.NotNil(t, own.Affinity.NodeAffinity)

	_, err := renderChart(t, map[string]any{"topology": "multiNode", "gateway": map[string]any{"podAntiAffinity": "sometimes"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gateway.podAntiAffinity must be soft, hard or none")
}
