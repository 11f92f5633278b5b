package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// smallJob writes a short gpujobsim job (4 ranks, 10 s) as stormlog JSON Lines.
func smallJob(t *testing.T, dir string) string {
	t.Helper()
	cfg := jobsim.DefaultConfig()
	cfg.Ranks, cfg.GPUsPerHost, cfg.LateRanks, cfg.Duration, cfg.CollectiveSpikes = 4, 4, 0, 10*time.Second, 2
	s, err := jobsim.NewScenario(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.WriteStormlog(&buf, 0, cfg.Duration, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "job.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	job := smallJob(t, dir)
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"schema_version\": 3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.html")
	tests := []struct {
		name      string
		args      []string
		stdin     string
		code      int
		stderr    string // substring
		page      bool   // out.html is written
		stdoutHas string
	}{
		{name: "job", args: []string{job, "-o", out, "--phases"}, code: exitOK, page: true},
		{name: "flags after file", args: []string{"--preset", "HIGH", job, "--output", out}, code: exitOK, page: true},
		{name: "stdout", args: []string{"-", "-o", "-"}, stdin: "", code: exitOK, stdoutHas: "<!DOCTYPE html>"},
		{name: "help", args: []string{"--help"}, code: exitOK, stdoutHas: "collectiveattr report"},
		{name: "evidence mode", args: []string{job, "-o", out, "--mode", " Evidence", "--evidence", `{"min_excess_bytes": 16777216}`}, code: exitOK, page: true},
		{name: "evidence mode, phases", args: []string{job, "-o", out, "--mode", "evidence", "--phases"}, code: exitOK, page: true},
		{name: "unknown mode", args: []string{job, "-o", out, "--mode", "magic"}, code: exitConfig, stderr: `unknown --mode "magic"`},
		{name: "evidence settings in reference mode", args: []string{job, "-o", out, "--evidence", `{}`}, code: exitConfig, stderr: "--evidence needs --mode evidence"},
		{name: "bad evidence key", args: []string{job, "-o", out, "--mode", "evidence", "--evidence", `{"min_excess": 1}`}, code: exitConfig, stderr: "Unknown evidence config fields: min_excess"},
		{name: "bad evidence json", args: []string{job, "-o", out, "--mode", "evidence", "--evidence", `[1]`}, code: exitConfig, stderr: "--evidence: must be a JSON object"},
		{name: "missing nccl inspector path", args: []string{job, "-o", out, "--nccl-inspector", filepath.Join(dir, "x.log")}, code: exitInput, stderr: "x.log"},
		{name: "no output", args: []string{job}, code: exitConfig, stderr: "missing -o"},
		{name: "no file", args: []string{"-o", out}, code: exitConfig, stderr: "missing FILE"},
		{name: "two files", args: []string{job, job, "-o", out}, code: exitConfig, stderr: "expected one FILE"},
		{name: "bad preset", args: []string{job, "-o", out, "--preset", "extreme"}, code: exitConfig, stderr: "preset"},
		{name: "bad override", args: []string{job, "-o", out, "--overrides", `{"min_samples_per_rank": 1}`}, code: exitConfig, stderr: "min_samples_per_rank must be >= 3"},
		{name: "bad overrides json", args: []string{job, "-o", out, "--overrides", `{`}, code: exitConfig, stderr: "--overrides"},
		{name: "bad columns", args: []string{job, "-o", out, "--columns", "5"}, code: exitConfig, stderr: "--columns"},
		{name: "invalid record", args: []string{bad, "-o", out}, code: exitInput, stderr: "line 1"},
		{name: "missing input", args: []string{filepath.Join(dir, "nope.jsonl"), "-o", out}, code: exitInput, stderr: "nope.jsonl"},
		{name: "unwritable output", args: []string{job, "-o", filepath.Join(dir, "no-such-dir", "r.html")}, code: exitInput, stderr: "no-such-dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(out)
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"report"}, tt.args...), strings.NewReader(tt.stdin), &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tt.stderr)
			}
			if !strings.Contains(stdout.String(), tt.stdoutHas) {
				t.Errorf("stdout lacks %q", tt.stdoutHas)
			}
			b, err := os.ReadFile(out)
			if tt.page != (err == nil) {
				t.Fatalf("page written: %v, want %v", err == nil, tt.page)
			}
			if tt.page && (!strings.Contains(string(b), `data-rank="3"`) || !strings.Contains(string(b), "</html>")) {
				t.Error("the page lacks rank 3's lane or its end")
			}
			phases := strings.Contains(string(b), `<path class="ph `)
			if wantPhases := slices.Contains(tt.args, "--phases"); tt.page && phases != wantPhases {
				t.Errorf("phase bars drawn: %v, want %v", phases, wantPhases)
			}
			left, _ := filepath.Glob(filepath.Join(dir, ".out.html.*"))
			if len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}
