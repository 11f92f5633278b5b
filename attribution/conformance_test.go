package attribution_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/internal/conformance"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

// loadCases loads one golden set (testdata/conformance); missing data fails.
func loadCases(t *testing.T, set string) []conformance.Case {
	t.Helper()
	cases, err := conformance.Load(set)
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

func TestConformanceAttribution(t *testing.T) {
	runConformance(t, "attribution", false)
}

func TestConformancePhases(t *testing.T) {
	runConformance(t, "phases", true)
}

func runConformance(t *testing.T, set string, withPhases bool) {
	cases := loadCases(t, set)
	t.Logf("%d cases in %s", len(cases), set)
	for _, c := range cases {
		t.Run(filepath.Base(c.Dir), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(c.Dir, "events.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			events, err := telemetry.DecodeJSONL(data)
			if err != nil {
				// The reference fails the whole load on an invalid record.
				var rerr *telemetry.RecordError
				if c.ExpectedError != nil && errors.As(err, &rerr) && rerr.Err.Error() == *c.ExpectedError {
					return
				}
				t.Fatalf("decode events: %v", err)
			}
			preset := ""
			if c.Preset != nil {
				preset = *c.Preset
			}
			var resolver attribution.PhaseResolver
			if withPhases {
				resolver = phase.NewIndex(events, nil)
			}
			results, err := attributeWithPreset(events, preset, c.Overrides, resolver)
			if c.ExpectedError != nil {
				if err == nil {
					t.Fatalf("want error %q, got none", *c.ExpectedError)
				}
				if err.Error() != *c.ExpectedError {
					t.Fatalf("error %q, want %q", err, *c.ExpectedError)
				}
				return
			}
			if err != nil {
				t.Fatalf("config: %v", err)
			}
			got := attribution.AppendResultsJSON(nil, results, withPhases)
			if diff := conformance.CompareJSON(c.Expected, got); diff != "" {
				t.Fatalf("result differs: %s\ngot:  %s\nwant: %s", diff, got, compact(c.Expected))
			}
		})
	}
}

func compact(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// attributeWithPreset is the reference's attribute_collective_memory called
// with preset and overrides, as the CLI runs it: an empty run has no
// results before the configuration is looked at (so a bad preset is only
// an error when there are events); otherwise the configuration is resolved
// and validated, and the events are attributed through one window.
func attributeWithPreset(events []telemetry.Event, preset string, overrides map[string]any, resolver attribution.PhaseResolver) ([]attribution.Result, error) {
	if len(events) == 0 {
		return nil, nil
	}
	cfg, err := attribution.ResolveConfig(preset, overrides)
	if err != nil {
		return nil, err
	}
	return window.AttributeReference(events, cfg, resolver), nil
}
