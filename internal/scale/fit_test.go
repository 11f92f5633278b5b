package scale

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// runFit runs fit.sh on bench output; it returns the output and whether it
// passed.
func runFit(t *testing.T, bench string) (string, bool) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("fit.sh needs bash")
	}
	cmd := exec.Command("bash", "fit.sh")
	cmd.Stdin = strings.NewReader(bench)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatal(err)
	}
	return out.String(), err == nil
}

// TestFitJudgesGrowth: fit.sh passes a path linear or n log n in its size,
// and fails one quadratic in time or in bytes, reading cpu-ns/op over
// ns/op when both are there.
func TestFitJudgesGrowth(t *testing.T) {
	tests := []struct {
		name  string
		bench string
		pass  bool
	}{
		{"linear", "BenchmarkA/ranks=64-2 3 100 ns/op 64 B/op\nBenchmarkA/ranks=256-2 3 400 ns/op 256 B/op\nBenchmarkA/ranks=1024-2 3 1600 ns/op 1024 B/op\n", true},
		{"n log n", "BenchmarkA/members=64-2 3 384 ns/op\nBenchmarkA/members=256-2 3 2048 ns/op\nBenchmarkA/members=1024-2 3 10240 ns/op\n", true},
		{"quadratic time", "BenchmarkA/ranks=64/m-2 3 1 ns/op\nBenchmarkA/ranks=256/m-2 3 16 ns/op\nBenchmarkA/ranks=1024/m-2 3 256 ns/op\n", false},
		{"quadratic bytes", "BenchmarkA/ranks=64-2 3 1 ns/op 1 B/op\nBenchmarkA/ranks=256-2 3 4 ns/op 16 B/op\nBenchmarkA/ranks=1024-2 3 16 ns/op 256 B/op\n", false},
		{"cpu time wins", "BenchmarkA/ranks=64-2 3 1 ns/op 100 cpu-ns/op\nBenchmarkA/ranks=256-2 3 16 ns/op 400 cpu-ns/op\nBenchmarkA/ranks=1024-2 3 256 ns/op 1600 cpu-ns/op\n", true},
		{"two sizes are not judged", "BenchmarkA/ranks=64-2 3 1 ns/op\nBenchmarkA/ranks=256-2 3 1000 ns/op\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, pass := runFit(t, tt.bench)
			if pass != tt.pass {
				t.Errorf("passed %v, want %v:\n%s", pass, tt.pass, out)
			}
		})
	}
}
