package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

// readAllThenAttribute is `attribute` as it was before the records were
// streamed: every event read into a slice, then attributed (through one
// window, as the engines read records); an empty run has no results
// whatever the preset.
func readAllThenAttribute(data []byte, preset string, phases bool) (string, error) {
	events, err := telemetry.ReadAuto(bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	var resolver attribution.PhaseResolver
	if phases {
		resolver = phase.NewIndex(events, nil)
	}
	var results []attribution.Result
	if len(events) > 0 {
		cfg, err := attribution.ResolveConfig(preset, nil)
		if err != nil {
			return "", err
		}
		results = window.AttributeReference(events, cfg, resolver)
	}
	return string(attribution.AppendResultsJSON(nil, results, phases)) + "\n", nil
}

// TestStreamedRunMatchesReadAll: on a simulated job (collective spikes,
// unrelated spikes, phases, a late rank, clock skew) as JSON Lines, a JSON
// array and a one-line events document, for each preset, with and without
// phases, `attribute` prints what reading all events first printed.
func TestStreamedRunMatchesReadAll(t *testing.T) {
	cfg := jobsim.DefaultConfig()
	cfg.Ranks, cfg.Duration, cfg.ClockSkew = 8, 40*time.Second, 20*time.Millisecond
	s, err := jobsim.NewScenario(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := s.Run(context.Background(), jobsim.Options{Epoch: time.Unix(1767225600, 0), Stormlog: &buf}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	dir := t.TempDir()
	forms := map[string]string{
		"jsonl":    buf.String(),
		"array":    "[" + strings.Join(lines, ",\n") + "]\n",
		"document": `{"events": [` + strings.Join(lines, ", ") + `]}`,
		"empty":    "",
	}
	for name, text := range forms {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, preset := range []string{"low", "medium", "high", "bogus"} {
			for _, phases := range []bool{false, true} {
				want, wantErr := readAllThenAttribute([]byte(text), preset, phases)
				args := []string{"attribute", "--preset", preset, path}
				if phases {
					args = append(args, "--phases")
				}
				var stdout, stderr strings.Builder
				code := run(args, nil, &stdout, &stderr)
				label := fmt.Sprintf("%s preset %s phases %v", name, preset, phases)
				switch {
				case wantErr != nil && (code != exitConfig || strings.TrimSpace(stderr.String()) != wantErr.Error()):
					t.Fatalf("%s: exit %d, stderr %q; want exit 2, %q", label, code, stderr.String(), wantErr)
				case wantErr == nil && (code != exitOK || stdout.String() != want):
					t.Fatalf("%s: exit %d, stderr %q, output differs from reading all events first", label, code, stderr.String())
				case wantErr == nil && name != "empty" && want == "[]\n":
					t.Fatalf("%s: no results, the comparison is empty", label)
				}
			}
		}
	}
}
