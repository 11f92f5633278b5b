// Package scale holds what the scale benchmarks share: the sizes they run
// at, in ranks or members per collective (docs/sizing.md). A default
// `go test -bench` run stops at DefaultMax; COLLECTIVEATTR_SCALE_MAX raises
// the bound (16384 for the full run the sizing guide reports).
package scale

import (
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// EnvMax names the environment variable that bounds the sizes.
const EnvMax = "COLLECTIVEATTR_SCALE_MAX"

// DefaultMax is the largest size a run without EnvMax reaches: big enough
// for an exponent, small enough for `make bench`.
const DefaultMax = 1024

// all are the sizes, a factor of 4 apart from 64 to 16 384 ranks.
var all = []int{64, 256, 1024, 4096, 16384}

// Sizes returns the sizes up to the bound EnvMax sets (DefaultMax when
// unset or not a positive integer).
func Sizes() []int {
	limit := Max()
	var out []int
	for _, n := range all {
		if n <= limit {
			out = append(out, n)
		}
	}
	return out
}

// Max is the bound EnvMax sets (DefaultMax when unset or not a positive
// integer), for a benchmark that runs at a size of its own.
func Max() int {
	if v, err := strconv.Atoi(os.Getenv(EnvMax)); err == nil && v > 0 {
		return v
	}
	return DefaultMax
}

// CPUMeter measures the process's CPU time (user + system) over a
// benchmark's loop: on a shared machine wall time counts the other
// processes' turns, CPU time far less.
type CPUMeter struct{ start, elapsed time.Duration }

// StartCPU starts a CPUMeter; call it just before the benchmark's loop.
func StartCPU() *CPUMeter { return &CPUMeter{start: cpuTime()} }

// Pause stops counting, with b.StopTimer, while an iteration's input is
// built; Resume counts again.
func (m *CPUMeter) Pause(b *testing.B) {
	b.StopTimer()
	m.elapsed += cpuTime() - m.start
}

// Resume counts again after Pause.
func (m *CPUMeter) Resume(b *testing.B) {
	m.start = cpuTime()
	b.StartTimer()
}

// Report stops the meter and adds the CPU time per iteration to b's
// results as "cpu-ns/op".
func (m *CPUMeter) Report(b *testing.B) {
	m.elapsed += cpuTime() - m.start
	if b.N > 0 {
		b.ReportMetric(float64(m.elapsed)/float64(b.N), "cpu-ns/op")
	}
}

// Elapsed is the CPU time Report measured.
func (m *CPUMeter) Elapsed() time.Duration { return m.elapsed }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
