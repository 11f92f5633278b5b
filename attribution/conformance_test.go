package attribution_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// conformanceCase is one golden folder: events.jsonl and case.json.
type conformanceCase struct {
	Dir           string
	Name          string          `json:"name"`
	Preset        *string         `json:"preset"`
	Overrides     map[string]any  `json:"overrides"`
	Expected      json.RawMessage `json:"expected"`
	ExpectedError *string         `json:"expected_error"`
}

// conformanceRoot finds ../shared/conformance next to the repository root.
func conformanceRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("repository root (go.mod) not found")
		}
		dir = parent
	}
	root := filepath.Join(dir, "..", "shared", "conformance")
	if _, err := os.Stat(filepath.Join(dir, "..", "shared")); err != nil {
		t.Skipf("conformance cases not available: %v", err)
	}
	return root
}

func loadCases(t *testing.T, set string) []conformanceCase {
	t.Helper()
	dir := filepath.Join(conformanceRoot(t), set)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		t.Fatal(err)
	}
	var cases []conformanceCase
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "case.json"))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var c conformanceCase
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		c.Dir = filepath.Join(dir, e.Name())
		if c.Expected == nil && c.ExpectedError == nil {
			t.Fatalf("%s: neither expected nor expected_error", e.Name())
		}
		cases = append(cases, c)
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
			results, err := attribution.AttributeWithPreset(events, preset, c.Overrides, resolver)
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
			if diff := CompareJSON(c.Expected, got); diff != "" {
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

// CompareJSON compares two JSON documents structurally: same keys (presence
// and absence), same array lengths, exact strings, booleans, nulls and
// integers, and floats within 1e-9. An integer never matches a float lexeme
// (1 vs 1.0), since the reference serialisation distinguishes them. It
// returns "" when equal, else the path of the first difference.
func CompareJSON(want, got []byte) string {
	w, err := decodeNumbers(want)
	if err != nil {
		return "expected is not JSON: " + err.Error()
	}
	g, err := decodeNumbers(got)
	if err != nil {
		return "output is not JSON: " + err.Error()
	}
	return compareValue("$", w, g)
}

func decodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func compareValue(path string, w, g any) string {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want object, got %T", path, g)
		}
		keys := make([]string, 0, len(wv)+len(gv))
		for k := range wv {
			keys = append(keys, k)
		}
		for k := range gv {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range slices.Compact(keys) {
			a, inW := wv[k]
			b, inG := gv[k]
			switch {
			case !inW:
				return fmt.Sprintf("%s.%s: unexpected key", path, k)
			case !inG:
				return fmt.Sprintf("%s.%s: missing key", path, k)
			}
			if d := compareValue(path+"."+k, a, b); d != "" {
				return d
			}
		}
		return ""
	case []any:
		gv, ok := g.([]any)
		if !ok {
			return fmt.Sprintf("%s: want array, got %T", path, g)
		}
		if len(wv) != len(gv) {
			return fmt.Sprintf("%s: want %d elements, got %d", path, len(wv), len(gv))
		}
		for i := range wv {
			if d := compareValue(fmt.Sprintf("%s[%d]", path, i), wv[i], gv[i]); d != "" {
				return d
			}
		}
		return ""
	case json.Number:
		gv, ok := g.(json.Number)
		if !ok {
			return fmt.Sprintf("%s: want number %s, got %v", path, wv, g)
		}
		wInt, gInt := !strings.ContainsAny(string(wv), ".eE"), !strings.ContainsAny(string(gv), ".eE")
		if wInt != gInt {
			return fmt.Sprintf("%s: want %s, got %s (integer vs float)", path, wv, gv)
		}
		if wInt {
			if wv != gv {
				return fmt.Sprintf("%s: want %s, got %s", path, wv, gv)
			}
			return ""
		}
		a, _ := wv.Float64()
		b, _ := gv.Float64()
		if math.Abs(a-b) > 1e-9 {
			return fmt.Sprintf("%s: want %s, got %s", path, wv, gv)
		}
		return ""
	default:
		if w != g {
			return fmt.Sprintf("%s: want %v, got %v", path, w, g)
		}
		return ""
	}
}
