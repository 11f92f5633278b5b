package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// TestDemoSourcesFollowTheManifest checks, without ocb, that the committed demo collector
// sources (cmd/otelcol-collectiveattr-demo, which make demo builds) build what
// builder-config-demo.yaml lists: every component and provider imported and required at
// the manifest's version, the manifest's replaces in go.mod, and the logger-only telemetry
// factory in place of otelconftelemetry. `make check-demo-sources` (in make ci) compares
// them with ocb's output byte for byte.
func TestDemoSourcesFollowTheManifest(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "builder-config-demo.yaml"))
	require.NoError(t, err)
	type module struct {
		GoMod  string `yaml:"gomod"`
		Import string `yaml:"import"`
		Path   string `yaml:"path"`
	}
	var m struct {
		Receivers  []module `yaml:"receivers"`
		Processors []module `yaml:"processors"`
		Exporters  []module `yaml:"exporters"`
		Extensions []module `yaml:"extensions"`
		Providers  []module `yaml:"providers"`
		Replaces   []string `yaml:"replaces"`
	}
	require.NoError(t, yaml.Unmarshal(b, &m))

	dir := filepath.Join(root, "cmd", "otelcol-collectiveattr-demo")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return string(b)
	}
	gomod, components, mainGo := read("go.mod"), read("components.go"), read("main.go")
	required := map[string]string{}
	for _, l := range regexp.MustCompile(`(?m)^\t(\S+) (v\S+)`).FindAllStringSubmatch(gomod, -1) {
		required[l[1]] = l[2]
	}
	var all []module
	for _, section := range [][]module{m.Receivers, m.Processors, m.Exporters, m.Extensions, m.Providers} {
		all = append(all, section...)
	}
	require.NotEmpty(t, all)
	for _, c := range all {
		fields := strings.Fields(c.GoMod)
		require.Len(t, fields, 2, "gomod %q", c.GoMod)
		assert.Equal(t, fields[1], required[fields[0]], "go.mod requires %s at the manifest's version", fields[0])
		imp := c.Import
		if imp == "" {
			imp = fields[0]
		}
		assert.True(t, strings.Contains(components, `"`+imp+`"`) || strings.Contains(mainGo, `"`+imp+`"`), "%s is imported", imp)
		if c.Path != "" {
			assert.Regexp(t, `(?m)^replace `+regexp.QuoteMeta(fields[0])+` `+regexp.QuoteMeta(fields[1])+` => \.\./\.\.$`, gomod, "the local module is the repository")
		}
	}
	for _, r := range m.Replaces {
		assert.Contains(t, gomod, "replace "+r, "the manifest's replace")
	}
	assert.NotContains(t, components, "otelconftelemetry")
	assert.Contains(t, components, "Telemetry: demoTelemetryFactory(),")
}
