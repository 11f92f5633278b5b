package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// inspectorJob writes a short gpujobsim job whose collective markers are
// only in NCCL Inspector logs: the stormlog file without its collective
// records, and the Inspector directory of its ranks. It returns both paths
// and the communicator id as the Inspector prints it.
func inspectorJob(t *testing.T, dir string, verbose bool) (stormlog, logs, commID string) {
	t.Helper()
	cfg := jobsim.DefaultConfig()
	cfg.Ranks, cfg.GPUsPerHost, cfg.LateRanks, cfg.Duration, cfg.CollectiveSpikes = 4, 4, 0, 10*time.Second, 2
	s, err := jobsim.NewScenario(cfg)
	if err != nil {
		t.Fatal(err)
	}
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	if err := s.WriteStormlog(&buf, 0, cfg.Duration, epoch); err != nil {
		t.Fatal(err)
	}
	events, err := telemetry.ReadAuto(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var kept []byte
	dropped := 0
	for i := range events {
		if attribution.IsMarker(&events[i]) && !attribution.IsSample(&events[i]) {
			dropped++
			continue
		}
		kept = append(telemetry.AppendJSON(kept, &events[i]), '\n')
	}
	if dropped == 0 {
		t.Fatal("the job has no markers to move to the Inspector logs")
	}
	stormlog = filepath.Join(dir, "job.jsonl")
	if err := os.WriteFile(stormlog, kept, 0o644); err != nil {
		t.Fatal(err)
	}
	logs = filepath.Join(dir, "inspector")
	if err := os.Mkdir(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	il, err := s.NewInspectorLogs(logs, verbose, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if err := il.Write(0, cfg.Duration+time.Second); err != nil {
		t.Fatal(err)
	}
	if err := il.Close(); err != nil {
		t.Fatal(err)
	}
	if il.Records == 0 {
		t.Fatal("no Inspector records written")
	}
	return stormlog, logs, s.InspectorCommID()
}

func reportPage(t *testing.T, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "r.html")
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"report", "-o", out}, args...), nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("%v: exit %d, stderr %q", args, code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	resultGroup = regexp.MustCompile(`<g class="res [^"]*">(.*?)</g>`)
	resultRect  = regexp.MustCompile(`<rect [^>]*data-i="`)
)

// shadedResults counts the result rectangles of the rank lanes.
func shadedResults(page string) int {
	n := 0
	for _, g := range resultGroup.FindAllStringSubmatch(page, -1) {
		n += len(resultRect.FindAllString(g[1], -1))
	}
	return n
}

// The report's results are the attribute command's: one shaded result per
// result of `attribute` with the same flags, in both modes, and with the
// markers coming only from NCCL Inspector logs.
func TestReportModesAndInspector(t *testing.T) {
	for _, verbose := range []bool{true, false} {
		dir := t.TempDir()
		job, logs, commID := inspectorJob(t, dir, verbose)
		for _, mode := range []string{"reference", "evidence"} {
			args := []string{"--mode", mode, "--nccl-inspector", logs, job}
			var results []map[string]any
			if err := json.Unmarshal([]byte(runInProcess(t, append([]string{"attribute"}, args...)...)), &results); err != nil {
				t.Fatal(err)
			}
			if len(results) == 0 {
				t.Fatalf("verbose %v %s: attribute found nothing", verbose, mode)
			}
			page := reportPage(t, args...)
			if got := shadedResults(page); got != len(results) {
				t.Errorf("verbose %v %s: %d shaded results, want attribute's %d", verbose, mode, got, len(results))
			}
			// Reference markers are bare; evidence markers name their communicator.
			if mode == "evidence" && !strings.Contains(page, commID) {
				t.Errorf("verbose %v %s: the Inspector's communicator %s is not on the page", verbose, mode, commID)
			}
			if !strings.Contains(page, "<th>mode</th><td>"+mode+"</td>") ||
				!strings.Contains(page, "<th>nccl_inspector</th><td>"+logs+"</td>") {
				t.Errorf("verbose %v %s: the inputs table lacks the mode or the Inspector path", verbose, mode)
			}
			hasEvidenceConfig := strings.Contains(page, "<th>evidence.min_excess_bytes</th><td>33554432</td>")
			if hasEvidenceConfig != (mode == "evidence") {
				t.Errorf("verbose %v %s: evidence settings listed: %v", verbose, mode, hasEvidenceConfig)
			}
		}
		// Without the Inspector logs this job has no marker at all.
		if page := reportPage(t, "--mode", "evidence", job); strings.Contains(page, commID) {
			t.Error("the communicator is on the page without --nccl-inspector")
		}
	}
}

// Every evidence setting is listed, under the key the configuration gives it.
func TestEvidenceConfigFields(t *testing.T) {
	fields := evidenceConfigFields(evidence.DefaultParams("medium"))
	if len(fields) != len(evidence.ParamFields) {
		t.Fatalf("%d fields, want one per evidence setting (%d)", len(fields), len(evidence.ParamFields))
	}
	for i, f := range fields {
		if want := "evidence." + evidence.ParamFields[i]; f.Key != want {
			t.Errorf("field %d is %q, want %q", i, f.Key, want)
		}
	}
}
