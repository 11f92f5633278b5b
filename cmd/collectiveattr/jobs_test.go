package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// simJob returns a short gpujobsim job (4 ranks, 10 s, two collective
// spikes) with the given job id as stormlog JSON Lines; seed varies it.
func simJob(t *testing.T, id string, seed int64) []byte {
	t.Helper()
	cfg := jobsim.DefaultConfig()
	cfg.JobID, cfg.Seed = id, seed
	cfg.Ranks, cfg.GPUsPerHost, cfg.LateRanks, cfg.Duration, cfg.CollectiveSpikes = 4, 4, 0, 10*time.Second, 2
	s, err := jobsim.NewScenario(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.WriteStormlog(&buf, 0, cfg.Duration, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// jobsFile writes the jobs named by ids, one after the other, to one file.
func jobsFile(t *testing.T, dir string, ids ...string) string {
	t.Helper()
	var all []byte
	for i, id := range ids {
		all = append(all, simJob(t, id, int64(i+1))...)
	}
	path := filepath.Join(dir, strings.Join(ids, "+")+".jsonl")
	if err := os.WriteFile(path, all, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A file holding two jobs is refused with a list of them; --job attributes
// one, with the results the job alone gives, and names no other job's rank.
func TestJobSelection(t *testing.T) {
	bin := buildCLI(t)
	dir := t.TempDir()
	both := jobsFile(t, dir, "train-a", "train-b")
	alone := filepath.Join(dir, "b-alone.jsonl") // train-b as in both: seed 2
	if err := os.WriteFile(alone, simJob(t, "train-b", 2), 0o644); err != nil {
		t.Fatal(err)
	}

	res := runCLI(t, bin, nil, "attribute", both)
	if res.code != exitConfig || res.stdout != "" {
		t.Fatalf("two jobs: exit %d, stdout %q; want exit 2, no output", res.code, res.stdout)
	}
	for _, want := range []string{"holds 2 jobs", "--job train-a", "--job train-b", "4 ranks"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("two jobs: stderr %q does not contain %q", res.stderr, want)
		}
	}
	if n := strings.Count(res.stderr, "\n"); n > 4 {
		t.Errorf("two jobs: %d lines of stderr, want the error and the list only:\n%s", n, res.stderr)
	}

	for _, mode := range []string{"reference", "evidence"} {
		chosen := runCLI(t, bin, nil, "attribute", "--mode", mode, "-q", "--job", "train-b", both)
		single := runCLI(t, bin, nil, "attribute", "--mode", mode, "-q", alone)
		if chosen.code != 0 || single.code != 0 {
			t.Fatalf("%s: exit %d (%s) / %d (%s)", mode, chosen.code, chosen.stderr, single.code, single.stderr)
		}
		var results []any
		if err := json.Unmarshal([]byte(single.stdout), &results); err != nil || len(results) == 0 {
			t.Fatalf("%s: job b alone: %v, %d results", mode, err, len(results))
		}
		if chosen.stdout != single.stdout {
			t.Errorf("%s: --job train-b of both differs from train-b alone:\n%s\nvs\n%s", mode, chosen.stdout, single.stdout)
		}
	}

	res = runCLI(t, bin, nil, "attribute", "--job", "train-c", both)
	if res.code != exitConfig || !strings.Contains(res.stderr, "--job train-c: no record") || !strings.Contains(res.stderr, "train-a, train-b") {
		t.Errorf("unknown job: exit %d, stderr %q", res.code, res.stderr)
	}

	res = runCLI(t, bin, nil, "report", "--job", "train-a", both, "-o", filepath.Join(dir, "a.html"))
	if res.code != 0 {
		t.Errorf("report --job: exit %d: %s", res.code, res.stderr)
	}
	res = runCLI(t, bin, nil, "report", both, "-o", filepath.Join(dir, "both.html"))
	if res.code != exitConfig || !strings.Contains(res.stderr, "holds 2 jobs") {
		t.Errorf("report of two jobs: exit %d, stderr %q", res.code, res.stderr)
	}
}
