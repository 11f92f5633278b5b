package deploytest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// downwardAPI stands in for the values the kubelet fills in.
var downwardAPI = map[string]string{
	"status.podIP":  "127.0.0.1",
	"status.hostIP": "127.0.0.1",
	"spec.nodeName": "gpu-node-1",
	"metadata.name": "collectiveattr-gateway-0",
}

// TestRenderedCollectorConfigsValidate runs the real binary's `validate` on
// every collector config of every rendered workload, exactly as the pod
// would load it: the container's --config arguments resolved to the mounted
// ConfigMap keys, with the container's environment.
func TestRenderedCollectorConfigsValidate(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			r := index(t, renderAndDecode(t, sc.values))
			ws := r.workloads()
			require.NotEmpty(t, ws)
			for _, w := range ws {
				t.Run(w.name, func(t *testing.T) {
					bin := collectorBinary(t)
					if w.agent {
						bin = agentBinary(t)
					}
					args, env := podConfig(t, r, w.pod)
					out, err := runValidate(bin, args, env)
					require.NoError(t, err, "%s validate %v:\n%s", filepath.Base(bin), args, out)
				})
			}
		})
	}
}

// The validate runs above only mean something if validate rejects a bad
// config: a misspelt processor key must fail for both binaries.
func TestValidateRejectsBrokenConfig(t *testing.T) {
	for _, tc := range []struct {
		bin  func(testing.TB) string
		file string
		key  string
	}{
		{collectorBinary, "gateway.yaml", "    preset: medium\n"},
		{agentBinary, "agent.yaml", "    routing_key: attributes\n"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			bin := tc.bin(t)
			cfg := readChartFile(t, tc.file)
			broken := strings.Replace(cfg, tc.key, tc.key+"    no_such_key: 1\n", 1)
			require.NotEqual(t, cfg, broken)
			dir := t.TempDir()
			path := filepath.Join(dir, "broken.yaml")
			require.NoError(t, os.WriteFile(path, []byte(broken), 0o600))
			env := map[string]string{
				"POD_IP": "127.0.0.1", "OTLP_GRPC_PORT": "4317", "OTLP_HTTP_PORT": "4318",
				"JAEGER_OTLP_ENDPOINT": "127.0.0.1:4317", "PROMETHEUS_PORT": "8889",
				"DCGM_JOB_POD_PATTERN": "^(.+)-worker-[0-9]+$",
			}
			out, err := runValidate(bin, []string{path}, env)
			require.Error(t, err, "validate accepted an unknown key:\n%s", out)
			assert.Contains(t, out, "no_such_key")
		})
	}
}

// podConfig writes the ConfigMap files a pod mounts into a temporary
// directory and returns the config paths of its first container, in order,
// and that container's environment with the downward API filled in.
func podConfig(t *testing.T, r rendered, pod corev1.PodTemplateSpec) ([]string, map[string]string) {
	t.Helper()
	c := pod.Spec.Containers[0]
	mounts := map[string]string{} // mount path -> ConfigMap name
	for _, vm := range c.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil {
				mounts[vm.MountPath] = v.ConfigMap.Name
			}
		}
	}
	dir := t.TempDir()
	var paths []string
	for _, arg := range c.Args {
		p, ok := strings.CutPrefix(arg, "--config=")
		require.True(t, ok, "unexpected argument %q", arg)
		cmName, ok := mounts[filepath.Dir(p)]
		require.True(t, ok, "%s is not on a ConfigMap mount", p)
		cm, ok := r.configMaps[cmName]
		require.True(t, ok, "ConfigMap %s is not rendered", cmName)
		data, ok := cm.Data[filepath.Base(p)]
		require.True(t, ok, "ConfigMap %s has no key %s", cmName, filepath.Base(p))
		local := filepath.Join(dir, filepath.Base(p))
		require.NoError(t, os.WriteFile(local, []byte(data), 0o600))
		paths = append(paths, local)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			v, ok := downwardAPI[e.ValueFrom.FieldRef.FieldPath]
			require.True(t, ok, "no stand-in for %s", e.ValueFrom.FieldRef.FieldPath)
			env[e.Name] = v
		default:
			t.Fatalf("env %s: unsupported source", e.Name)
		}
	}
	// An unset variable expands to "" with only a warning; require that
	// the container sets every variable its configs use.
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, m := range envReference.FindAllStringSubmatch(string(b), -1) {
			assert.Contains(t, env, m[1], "%s uses ${env:%s}; the container does not set it", filepath.Base(p), m[1])
		}
	}
	return paths, env
}

var envReference = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// runValidate runs `<bin> validate --config=...` with exactly env (plus PATH
// and HOME), so a variable the config uses but the pod does not set shows up
// as an error instead of being taken from the test's environment.
func runValidate(bin string, configs []string, env map[string]string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"validate"}
	for _, c := range configs {
		args = append(args, "--config="+c)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%s", k, v))
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
