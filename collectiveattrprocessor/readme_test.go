package collectiveattrprocessor

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/store"
)

// configKeys returns the dotted configuration keys of a struct type's
// mapstructure tags, descending into nested structs (limits.max_jobs).
func configKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for f := range t.Fields() {
		tag := f.Tag.Get("mapstructure")
		if tag == "" || tag == "-" {
			continue
		}
		if tag == ",squash" {
			keys = append(keys, configKeys(f.Type, prefix)...)
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			keys = append(keys, configKeys(f.Type, prefix+tag+".")...)
			continue
		}
		keys = append(keys, prefix+tag)
	}
	return keys
}

// TestReadmeConfigurationTable checks that the component README's
// configuration table lists exactly the keys Config decodes, so that a key
// added to one is added to the other.
func TestReadmeConfigurationTable(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_.]+)` \\|").FindAllSubmatch(readme, -1) {
		documented = append(documented, string(m[1]))
	}
	want := configKeys(reflect.TypeFor[Config](), "")
	slices.Sort(want)
	slices.Sort(documented)
	assert.Equal(t, want, documented, "README.md's configuration table and Config's keys differ")
}

// metadataEnums returns the values metadata.yaml declares for each
// attribute that has an enum, by attribute id.
func metadataEnums(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile("metadata.yaml")
	require.NoError(t, err)
	var md struct {
		Attributes map[string]struct {
			Enum []string `yaml:"enum"`
		} `yaml:"attributes"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &md))
	enums := map[string][]string{}
	for id, a := range md.Attributes {
		if a.Enum != nil {
			enums[id] = a.Enum
		}
	}
	return enums
}

// TestMetadataClassificationsAreTheEngines checks that the classification
// values declared for the results_emitted metric and the result metrics
// (metadata.yaml) are the engines' list and the ledger's growth results'.
func TestMetadataClassificationsAreTheEngines(t *testing.T) {
	enums := metadataEnums(t)
	want := emittedClassifications()
	slices.Sort(want)
	// classification labels the self-telemetry counter, result_classification
	// the result metrics' points: both take every emitted classification.
	for _, attr := range []string{"classification", "result_classification"} {
		got := enums[attr]
		slices.Sort(got)
		assert.Equal(t, want, got, attr)
	}
}

// TestMetadataSkipReasonsAreTheConverters checks that the reason values
// declared for items_skipped (metadata.yaml) are exactly the reasons the
// processor counts, so that a new skip reason is declared and documented.
func TestMetadataSkipReasonsAreTheConverters(t *testing.T) {
	enums := metadataEnums(t)
	got := enums["reason"]
	var want []string
	for _, r := range skipReasons {
		want = append(want, string(r))
	}
	slices.Sort(got)
	slices.Sort(want)
	assert.Equal(t, want, got)
}

// TestMetadataEnumsAreWhatTheProcessorRecords checks that the values
// declared for the self-telemetry attributes whose values the processor
// lists itself (metadata.yaml) are exactly those lists: the buffer bounds
// (the window's, which imports nothing of the collector), the emit
// failures, the Inspector outcomes and the signals.
func TestMetadataEnumsAreWhatTheProcessorRecords(t *testing.T) {
	enums := metadataEnums(t)
	recorded := map[string][]string{}
	for b := range store.NumBounds {
		recorded["bound"] = append(recorded["bound"], b.String())
	}
	for f := range numEmitFailures {
		recorded["emit_reason"] = append(recorded["emit_reason"], f.String())
	}
	for _, o := range inspectorOutcomes {
		recorded["inspector_outcome"] = append(recorded["inspector_outcome"], o.String())
	}
	for s := range numSignals {
		recorded["signal"] = append(recorded["signal"], s.String())
	}
	for attr, got := range recorded {
		want := slices.Clone(enums[attr])
		slices.Sort(want)
		slices.Sort(got)
		assert.Equal(t, want, got, attr)
	}
}
