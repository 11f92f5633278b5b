package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// collectorConfigs lists the repository's collector configurations: YAML files under
// examples/ and testdata/ whose top level has both `receivers` and `service`, plus the
// README's YAML blocks that are whole configurations.
func collectorConfigs(t *testing.T) map[string][]byte {
	t.Helper()
	root := repoRoot(t)
	configs := map[string][]byte{}
	for _, dir := range []string{"examples", "testdata"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if isCollectorConfig(b) {
				rel, _ := filepath.Rel(root, path)
				configs[rel] = b
			}
			return nil
		})
		require.NoError(t, err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	for i, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(readme, -1) {
		if isCollectorConfig(m[1]) {
			configs["README.md#yaml-"+itoa(i)] = m[1]
		}
	}
	return configs
}

func isCollectorConfig(b []byte) bool {
	var top map[string]any
	if yaml.Unmarshal(b, &top) != nil {
		return false
	}
	_, r := top["receivers"]
	_, s := top["service"]
	return r && s
}

// TestValidateExampleConfigs runs `otelcol-collectiveattr validate` on every collector
// configuration in the repository: each must name only components the distribution has
// and pass every component's Validate (environment variables at their defaults).
func TestValidateExampleConfigs(t *testing.T) {
	collectorBinary(t)
	configs := collectorConfigs(t)
	for _, want := range []string{"examples/demo/config.yaml", "examples/inprocess/config.yaml", "examples/dcgm/config.yaml", "examples/stormlog-filelog/config.yaml", "examples/phase-spans/config.yaml", "examples/persistence/config.yaml"} {
		assert.Contains(t, configs, want)
	}
	dir := t.TempDir()
	for name, b := range configs {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.NewReplacer("/", "_", "#", "_").Replace(name))
			require.NoError(t, os.WriteFile(path, b, 0o644))
			out, err := runCommand(t, nil, "validate", "--config", path)
			assert.NoError(t, err, "validate %s:\n%s", name, out)
		})
	}
}
