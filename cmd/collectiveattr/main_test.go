package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/collectiveattr/collectiveattr/internal/conformance"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// buildCLI compiles the command once per test binary run.
func buildCLI(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "collectiveattr-cli")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "collectiveattr")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

type cliResult struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, bin string, stdin []byte, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliResult{code, out.String(), errb.String()}
}

// TestCLIConformance runs every golden case through the built binary, the
// way an operator would (docs/processor-contract.md §7).
func TestCLIConformance(t *testing.T) {
	var sets [][]conformance.Case
	for _, set := range []string{"attribution", "phases"} {
		cases, err := conformance.Load(set)
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, cases)
	}
	bin := buildCLI(t)
	for _, cases := range sets {
		for _, c := range cases {
			t.Run(c.Set+"/"+filepath.Base(c.Dir), func(t *testing.T) {
				args := []string{"attribute", c.EventsPath()}
				if c.Preset != nil {
					args = append(args, "--preset", *c.Preset)
				}
				if len(c.OverridesJSON) > 0 {
					args = append(args, "--overrides", string(c.OverridesJSON))
				}
				if c.Set == "phases" {
					args = append(args, "--phases")
				}
				res := runCLI(t, bin, nil, args...)
				if c.ExpectedError != nil {
					// A configuration error exits 2 with the reference's
					// message; an invalid record exits 1 with it, after the
					// line it is on.
					want, msg := *c.ExpectedError, strings.TrimSpace(res.stderr)
					configErr := res.code == 2 && msg == want
					recordErr := res.code == 1 && strings.HasPrefix(msg, "line ") && strings.HasSuffix(msg, ": "+want)
					if res.stdout != "" || !configErr && !recordErr {
						t.Fatalf("exit %d, stderr %q, stdout %q; want exit 2 and %q, or exit 1 and line N: %[4]q", res.code, res.stderr, res.stdout, want)
					}
					return
				}
				// stderr holds the summary line alone, its count the results'.
				rest, n := withoutSummary(res.stderr)
				if res.code != 0 || rest != "" || n < 0 {
					t.Fatalf("exit %d, stderr %q; want exit 0 and the summary line", res.code, res.stderr)
				}
				if d := conformance.CompareJSON(c.Expected, []byte(res.stdout)); d != "" {
					t.Fatalf("%s\ngot: %s", d, res.stdout)
				}
				var expected []json.RawMessage
				if err := json.Unmarshal(c.Expected, &expected); err != nil {
					t.Fatal(err)
				}
				if n != len(expected) {
					t.Fatalf("summary %q counts %d results, want %d", res.stderr, n, len(expected))
				}
			})
		}
	}
}

func TestCLIBehaviour(t *testing.T) {
	bin := buildCLI(t)
	tmp := t.TempDir()
	good := `{"schema_version":2,"timestamp_ns":1,"event_type":"sample","collector":"c","sampling_interval_ms":0,"pid":1,"host":"h","device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":1,"allocator_active_bytes":null,"allocator_inactive_bytes":null,"allocator_change_bytes":0,"device_used_bytes":1,"device_free_bytes":null,"device_total_bytes":null,"context":null,"metadata":{}}`
	bad := strings.Replace(good, `"pid":1`, `"pid":1,"rank":2,"world_size":2`, 1)
	write := func(name, body string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goodFile := write("good.jsonl", good+"\n"+good+"\n")
	badFile := write("bad.jsonl", good+"\n\n"+good+"\n"+bad+"\n"+good+"\n")
	arrayFile := write("array.json", "[\n"+good+",\n"+bad+"\n]\n")
	emptyFile := write("empty.jsonl", "\n")

	tests := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantStdout string
		wantStderr string // substring
	}{
		{"no results prints empty array", []string{"attribute", goodFile}, "", 0, "[]\n", ""},
		{"stdin", []string{"attribute", "-"}, good + "\n", 0, "[]\n", ""},
		{"flags after file", []string{"attribute", goodFile, "--preset", "HIGH", "--phases"}, "", 0, "[]\n", ""},
		{"invalid record names its line", []string{"attribute", badFile}, "", 1, "", "line 4: rank must be < world_size"},
		{"invalid array element names its line and index", []string{"attribute", arrayFile}, "", 1, "", "line 3 (event at index 1): rank must be < world_size"},
		{"missing file", []string{"attribute", filepath.Join(tmp, "nope")}, "", 1, "", "no such file"},
		{"config error", []string{"attribute", "--overrides", `{"min_samples_per_rank": 2}`, goodFile}, "", 2, "", "min_samples_per_rank must be >= 3"},
		{"empty run is [] whatever the preset, as the reference", []string{"attribute", "--preset", "bogus", emptyFile}, "", 0, "[]\n", ""},
		{"records are read before the config is resolved", []string{"attribute", "--preset", "bogus", badFile}, "", 1, "", "line 4: rank must be < world_size"},
		{"unknown preset with events", []string{"attribute", "--preset", "bogus", goodFile}, "", 2, "", "Unknown collective attribution preset: 'bogus' (known: high, low, medium)"},
		{"override checked by value, as Python", []string{"attribute", "--overrides", `{"min_samples_per_rank": 2.5}`, goodFile}, "", 2, "", "min_samples_per_rank must be >= 3"},
		{"override that is no number", []string{"attribute", "--overrides", `{"min_confidence": "high"}`, goodFile}, "", 2, "", "min_confidence must be a number"},
		{"fractional override applied", []string{"attribute", "--overrides", `{"min_samples_per_rank": 3.5, "min_confidence": true}`, goodFile}, "", 0, "[]\n", ""},
		{"overrides not JSON", []string{"attribute", "--overrides", `{`, goodFile}, "", 2, "", "--overrides"},
		{"overrides not an object", []string{"attribute", "--overrides", `[1]`, goodFile}, "", 2, "", "must be a JSON object"},
		{"unknown flag", []string{"attribute", "--bogus", goodFile}, "", 2, "", "flag provided but not defined"},
		{"missing file argument", []string{"attribute"}, "", 2, "", "missing FILE"},
		{"two files", []string{"attribute", goodFile, goodFile}, "", 2, "", "expected one FILE"},
		{"unknown command", []string{"frobnicate"}, "", 2, "", "unknown command"},
		{"no arguments", nil, "", 2, "", "Usage:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdin []byte
			if tc.stdin != "" {
				stdin = []byte(tc.stdin)
			}
			res := runCLI(t, bin, stdin, tc.args...)
			if res.code != tc.wantCode {
				t.Fatalf("exit %d, want %d (stderr %q)", res.code, tc.wantCode, res.stderr)
			}
			if tc.wantCode == 0 && res.stdout != tc.wantStdout {
				t.Fatalf("stdout %q, want %q", res.stdout, tc.wantStdout)
			}
			if tc.wantCode != 0 && res.stdout != "" {
				t.Fatalf("stdout %q on failure", res.stdout)
			}
			if !strings.Contains(res.stderr, tc.wantStderr) {
				t.Fatalf("stderr %q does not contain %q", res.stderr, tc.wantStderr)
			}
		})
	}
}

func TestCLIHelpExplainsEveryFlag(t *testing.T) {
	bin := buildCLI(t)
	for _, args := range [][]string{{"--help"}, {"attribute", "--help"}, {"attribute", "-h"}} {
		res := runCLI(t, bin, nil, args...)
		if res.code != 0 {
			t.Fatalf("%v: exit %d", args, res.code)
		}
		for _, flagName := range []string{"--mode", "--preset", "--overrides", "--evidence", "--phases", "--job", "--format", "--strict", "--quiet", "--version", "FILE|-"} {
			if !strings.Contains(res.stdout, flagName) {
				t.Fatalf("%v: help does not mention %s", args, flagName)
			}
		}
	}
}
