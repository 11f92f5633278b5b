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
	assert.Equal(t, "--config=/conf/persistence.yaml", c.Args[len(c.Args)-1])
	assert.Contains(t, c.VolumeMounts, mount)
	v := volume(pod)
	require.NotNil(t, v)
	require.NotNil(t, v.HostPath)
	assert.Equal(t, "/scratch/ca", v.HostPath.Path)
	assert.Equal(t, "3s", envValue(c, "CHECKPOINT_INTERVAL"))
	assert.Contains(t, r.configMaps["collectiveattr-node-local"].Data, "persistence.yaml")
	assertConfigMapsAreTheTestedFiles(t, r)

	g := index(t, renderAndDecode(t, map[string]any{"mode": "multiNode", "persistence": map[string]any{"enabled": true, "hostPath": ""}}))
	gpod := g.statefulSets["collectiveattr-gateway"].Spec.Template.Spec
	assert.Equal(t, []string{"--config=/conf/gateway.yaml", "--config=/conf/persistence.yaml"}, gpod.Containers[0].Args)
	assert.Contains(t, gpod.Containers[0].VolumeMounts, mount)
	v = volume(gpod)
	require.NotNil(t, v)
	assert.NotNil(t, v.EmptyDir, "no hostPath: an emptyDir")
	assert.Equal(t, "10s", envValue(gpod.Containers[0], "CHECKPOINT_INTERVAL"))
	assertConfigMapsAreTheTestedFiles(t, g)
}
