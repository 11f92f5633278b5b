//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// reportMemoryMax bounds the peak resident memory of `collectiveattr report
// --phases` on a 64-rank job of 10 minutes at 20 samples a second (about
// 770 MB of stormlog JSON Lines): the records stream into the attribution's
// and the page's builders, none is kept.
const reportMemoryMax = 500 << 20

// TestReportMemory measures the report command's peak RSS (the kernel's
// ru_maxrss of the child) on the large job. Gated with the large browser
// case: writing the input takes about a minute and 770 MB of disk.
func TestReportMemory(t *testing.T) {
	if os.Getenv(envReportLarge) != "1" {
		t.Skipf("set %s=1 for the 64-rank x 10 min report memory bound", envReportLarge)
	}
	bin := buildCLI(t)
	dir := t.TempDir()
	input := filepath.Join(dir, "job.jsonl")
	// The input is written by a gpujobsim process, not in this one: a child
	// started from a process holding much memory reports that process's
	// peak as its own (Linux keeps ru_maxrss across exec).
	sim := filepath.Join(dir, "gpujobsim")
	if out, err := exec.Command("go", "build", "-o", sim, "../gpujobsim").CombinedOutput(); err != nil {
		t.Fatalf("go build gpujobsim: %v\n%s", err, out)
	}
	if out, err := exec.Command(sim, "-ranks", "64", "-rate", "20", "-duration", "600s", "-fast",
		"-epoch", "2026-01-01T00:00:00Z", "-otlp-endpoint", "", "-quiet", "-stormlog", input).CombinedOutput(); err != nil {
		t.Fatalf("gpujobsim: %v\n%s", err, out)
	}
	info, err := os.Stat(input)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"reference", "evidence"} {
		cmd := exec.Command(bin, "report", "--phases", "--mode", mode, input, "-o", filepath.Join(dir, mode+".html"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, out)
		}
		peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
		t.Logf("%s mode: %d MB input, peak RSS %d MB", mode, info.Size()>>20, peak>>20)
		if peak > reportMemoryMax {
			t.Errorf("%s mode: peak RSS %d MB, want at most %d MB", mode, peak>>20, reportMemoryMax>>20)
		}
	}
}
