package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/internal/eventgen"
)

func TestEvidenceMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	spec := eventgen.Default(4)
	spec.Samples = 400
	if err := os.WriteFile(path, eventgen.JSONL(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	exec := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"attribute"}, args...), nil, &out, &errb)
		return code, out.String(), errb.String()
	}

	_, ref, _ := exec(path)
	if code, explicit, _ := exec("--mode", "reference", path); code != 0 || explicit != ref {
		t.Errorf("--mode reference: exit %d, output differs from the default mode's", code)
	}
	if strings.Contains(ref, `"mode"`) {
		t.Errorf("reference output carries evidence keys: %.200s", ref)
	}

	code, out, stderr := exec("--mode", " Evidence ", "--preset", "medium", path)
	if code != 0 {
		t.Fatalf("--mode evidence: exit %d: %s", code, stderr)
	}
	var results []map[string]any
	if err := json.Unmarshal([]byte(out), &results); err != nil || len(results) == 0 {
		t.Fatalf("evidence output %.200q: %v (%d results)", out, err, len(results))
	}
	for _, key := range []string{"mode", "kind", "excess_bytes", "collective", "nccl_accounted_bytes"} {
		if _, ok := results[0][key]; !ok {
			t.Errorf("evidence result lacks %q: %v", key, results[0])
		}
	}

	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown mode", []string{"--mode", "guess", path}, "unknown --mode"},
		{"evidence keys in reference mode", []string{"--evidence", `{"min_excess_bytes": 1}`, path}, "--evidence needs --mode evidence"},
		{"unknown evidence key", []string{"--mode", "evidence", "--evidence", `{"window": 1}`, path}, "Unknown evidence config fields: window"},
		{"invalid evidence value", []string{"--mode", "evidence", "--evidence", `{"spread_floor_bytes": 0}`, path}, "evidence.spread_floor_bytes must be > 0"},
		{"evidence not JSON", []string{"--mode", "evidence", "--evidence", `{`, path}, "--evidence"},
		{"reference validation in evidence mode", []string{"--mode", "evidence", "--overrides", `{"min_confidence": 2}`, path}, "min_confidence must be in [0, 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := exec(tc.args...)
			if code != exitConfig || out != "" || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 with %q", code, out, stderr, tc.stderr)
			}
		})
	}
}
