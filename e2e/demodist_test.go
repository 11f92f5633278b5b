package e2e

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// componentKinds are the sections of a collector configuration and of an ocb
// manifest, with the suffix a component module's package name carries.
var componentKinds = map[string]string{
	"receivers":  "receiver",
	"processors": "processor",
	"exporters":  "exporter",
	"extensions": "extension",
}

// manifestTypes returns, per section, the component types an ocb manifest
// builds in: the last element of each module's import path without its kind
// suffix and without underscores (memorylimiterprocessor → memorylimiter).
func manifestTypes(t *testing.T, file string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	type module struct {
		GoMod  string `yaml:"gomod"`
		Import string `yaml:"import"`
	}
	var m struct {
		Receivers  []module `yaml:"receivers"`
		Processors []module `yaml:"processors"`
		Exporters  []module `yaml:"exporters"`
		Extensions []module `yaml:"extensions"`
	}
	require.NoError(t, yaml.Unmarshal(b, &m))
	sections := map[string][]module{
		"receivers": m.Receivers, "processors": m.Processors,
		"exporters": m.Exporters, "extensions": m.Extensions,
	}
	types := map[string][]string{}
	for section, suffix := range componentKinds {
		for _, c := range sections[section] {
			imp := c.Import
			if imp == "" {
				imp = strings.Fields(c.GoMod)[0]
			}
			types[section] = append(types[section], strings.TrimSuffix(path.Base(imp), suffix))
		}
	}
	return types
}

// TestDemoDistributionHasTheDemoComponents checks, without building anything,
// that every component examples/demo/config.yaml names is built into the
// demo distribution (builder-config-demo.yaml) that `make demo` runs it on.
func TestDemoDistributionHasTheDemoComponents(t *testing.T) {
	root := repoRoot(t)
	built := manifestTypes(t, filepath.Join(root, "builder-config-demo.yaml"))
	b, err := os.ReadFile(filepath.Join(root, "examples", "demo", "config.yaml"))
	require.NoError(t, err)
	var cfg map[string]map[string]any
	require.NoError(t, yaml.Unmarshal(b, &cfg))
	for section := range componentKinds {
		for id := range cfg[section] {
			typ, _, _ := strings.Cut(id, "/")
			typ = strings.ReplaceAll(typ, "_", "")
			if !slices.Contains(built[section], typ) {
				t.Errorf("examples/demo/config.yaml uses %s %q, which builder-config-demo.yaml does not build (it has %v)", section, id, built[section])
			}
		}
	}
}
