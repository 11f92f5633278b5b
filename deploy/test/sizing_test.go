package deploytest

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSizing measures the figures of docs/deployment.md's sizing section on
// the built collector: `make sizing` (COLLECTIVEATTR_SIZING=1) prints them.
// The node-local config, verbatim, ingests simulated jobs as fast as it
// takes them; CPU is the process's user+system time over the data points
// it received, memory the heap growth per buffered rank.
func TestSizing(t *testing.T) {
	if os.Getenv("COLLECTIVEATTR_SIZING") != "1" {
		t.Skip("run by `make sizing`")
	}
	sink := startSpanSink(t)
	col := startNodeLocal(t, sink.addr)
	selfMetrics := "http://" + addr(atoi(col.env["SELF_METRICS_PORT"])) + "/metrics"
	time.Sleep(3 * time.Second)
	heap0 := heapAlloc(t, selfMetrics)
	cpu0 := cpuSeconds(t, col.cmd.Process.Pid)

	const ranks, duration, rate = 64, 5 * time.Minute, 10.0
	sim := requireBinary(t, "COLLECTIVEATTR_GPUJOBSIM", "bin/gpujobsim", "cli")
	start := time.Now()
	out := run(t, 10*time.Minute, sim, "-fast", "-otlp-endpoint", col.otlpHTTP(), "-job-id", "sizing",
		"-ranks", strconv.Itoa(ranks), "-duration", duration.String(), "-rate", fmt.Sprint(rate), "-clock-skew", "0s")
	wall := time.Since(start)
	cpu := cpuSeconds(t, col.cmd.Process.Pid) - cpu0
	m := regexp.MustCompile(`sent (\d+) data points and (\d+) spans`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	points, _ := strconv.Atoi(m[1])
	spans, _ := strconv.Atoi(m[2])
	heap1 := heapAlloc(t, selfMetrics)

	eventsPerRank := duration.Seconds() * rate
	t.Logf("ingest: %d data points and %d spans in %.1fs wall, %.2f CPU-s of the collector", points, spans, wall.Seconds(), cpu)
	t.Logf("CPU per 1 000 data points/s: %.3f cores (with %.2f NCCL/phase spans per data point)", cpu/float64(points)*1000, float64(spans)/float64(points))
	t.Logf("heap: %.1f MiB before, %.1f MiB with %d ranks x %.0f samples buffered", heap0/(1<<20), heap1/(1<<20), ranks, eventsPerRank)
	t.Logf("memory per buffered rank (%.0f samples, 10 Hz over a 5 min window): %.2f MiB", eventsPerRank, (heap1-heap0)/ranks/(1<<20))
}

func heapAlloc(t *testing.T, url string) float64 {
	t.Helper()
	families, err := scrape(url)
	require.NoError(t, err)
	for name, mf := range families {
		if strings.HasPrefix(name, "otelcol_process_runtime_heap_alloc_bytes") {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no otelcol_process_runtime_heap_alloc_bytes in the collector's own metrics")
	return 0
}

// cpuSeconds is the user+system CPU time of a process, from /proc.
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	// Fields after the command name in parentheses; utime and stime are the
	// 14th and 15th fields of the line.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ
}
