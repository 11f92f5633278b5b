package deploytest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "re-render deploy/manifests/ from the chart (make manifests)")

const manifestHeader = `# Plain Kubernetes manifests for users without Helm, rendered from
# deploy/helm/collectiveattr by ` + "`make manifests`" + ` (do not edit by hand):
# release "collectiveattr" in namespace "gpu-monitoring" with the chart's
# default values%s. For another namespace or other values, render the chart.
`

// TestPlainManifests keeps deploy/manifests/ equal to the chart's rendering
// and checks the files themselves as the chart output is checked: strict
// decoding and the binaries' validate on every collector config.
func TestPlainManifests(t *testing.T) {
	for _, tc := range []struct {
		file   string
		note   string
		values map[string]any
	}{
		{"node-local.yaml", "", map[string]any{}},
		{"multi-node.yaml", ` and topology=multiNode`, map[string]any{"topology": "multiNode"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			rendered, err := renderChart(t, tc.values)
			require.NoError(t, err)
			want := fmtHeader(tc.note) + rendered
			path := filepath.Join(repoRoot(t), "deploy", "manifests", tc.file)
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
			}
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, want, string(got), "%s is stale: run `make manifests`", path)

			objs, err := decodeStrict(string(got))
			require.NoError(t, err)
			r := index(t, objs)
			for _, w := range r.workloads() {
				bin := collectorBinary(t)
				if w.agent {
					bin = agentBinary(t)
				}
				args, env := podConfig(t, r, w.pod)
				out, err := runValidate(bin, args, env)
				assert.NoError(t, err, "%s: %s", w.name, out)
			}
		})
	}
}

func fmtHeader(note string) string {
	return fmt.Sprintf(manifestHeader, note)
}
