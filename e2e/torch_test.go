package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// torchPython is the interpreter Debian's python3-torch installs for (the python3 first on
// PATH may be another one); .ci/run installs the package.
const torchPython = "/usr/bin/python3"

// torchModuleDir holds the PyTorch instrumentation module and its tests.
func torchModuleDir(t *testing.T) string {
	return filepath.Join(repoRoot(t), "python", "collectiveattr_torch")
}

// skipOrFailInCI skips with msg, or fails with it when CI is set (CI installs what the
// test needs, so a missing piece there is a broken CI, not a reason to skip).
func skipOrFailInCI(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set: .ci/run installs it)", msg)
	}
	t.Skip(msg)
}

func requireTorch(t *testing.T) {
	t.Helper()
	out, err := exec.Command(torchPython, "-c", "import torch").CombinedOutput()
	if err != nil {
		skipOrFailInCI(t, fmt.Sprintf("%s -c 'import torch' failed (%v): install Debian's python3-torch\n%s", torchPython, err, lastLines(string(out), 5)))
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestTorchModuleUnitTests runs the module's stdlib unittest suite under every Python the
// machine has of the two it is meant for: the python3 on PATH (no torch: the torch tests
// skip) and Debian's /usr/bin/python3 (with python3-torch: they run).
func TestTorchModuleUnitTests(t *testing.T) {
	var pythons []string
	seen := map[string]bool{}
	for _, name := range []string{"python3", torchPython} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			real = p
		}
		if !seen[real] {
			seen[real] = true
			pythons = append(pythons, p)
		}
	}
	if len(pythons) == 0 {
		skipOrFailInCI(t, "no python3 on this machine: the PyTorch module's unit tests need one")
	}
	for _, py := range pythons {
		t.Run(strings.ReplaceAll(py, "/", "_"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, py, "-m", "unittest", "discover", "-s", "tests", "-t", ".")
			cmd.Dir = torchModuleDir(t)
			cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
			out, err := cmd.CombinedOutput()
			t.Logf("%s:\n%s", py, lastLines(string(out), 4))
			require.NoError(t, err, "%s -m unittest:\n%s", py, out)
			require.Contains(t, string(out), "\nOK", "unittest summary")
		})
	}
}

// torchConfig is a collector with two processors fed the same job: reference mode and
// evidence mode, results at shutdown.
const torchConfig = `extensions:
  health_check:
    endpoint: 127.0.0.1:%[1]d
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%[2]d
processors:
  collectiveattr/reference:
    emit: on_job_end
    phases: false
    evaluation_interval: 500ms
    job_idle_timeout: 10m
  collectiveattr/evidence:
    mode: evidence
    emit: on_job_end
    phases: false
    evaluation_interval: 500ms
    job_idle_timeout: 10m
exporters:
  file/traces:
    path: %[3]s/traces.json
  file/metrics:
    path: %[3]s/metrics.json
  file/reference_logs:
    path: %[3]s/reference-logs.json
  file/evidence_logs:
    path: %[3]s/evidence-logs.json
  file/evidence_passthrough:
    path: %[3]s/evidence-passthrough.json
service:
  extensions: [health_check]
  pipelines:
    traces/reference:
      receivers: [otlp]
      processors: [collectiveattr/reference]
      exporters: [file/traces]
    metrics/reference:
      receivers: [otlp]
      processors: [collectiveattr/reference]
      exporters: [file/metrics]
    logs/reference:
      receivers: [otlp]
      processors: [collectiveattr/reference]
      exporters: [file/reference_logs]
    traces/evidence:
      receivers: [otlp]
      processors: [collectiveattr/evidence]
      exporters: [file/evidence_passthrough]
    metrics/evidence:
      receivers: [otlp]
      processors: [collectiveattr/evidence]
      exporters: [file/evidence_passthrough]
    logs/evidence:
      receivers: [otlp]
      processors: [collectiveattr/evidence]
      exporters: [file/evidence_logs]
`

// rankTruth is what tests/gloo_job.py writes per rank: the injected spike's window and
// the collective it starts at, and the module's own counters.
type rankTruth struct {
	Rank         int64            `json:"rank"`
	SpikeStartNs int64            `json:"spike_start_ns"`
	SpikeEndNs   int64            `json:"spike_end_ns"`
	CommID       string           `json:"comm_id"`
	Op           string           `json:"op"`
	Seq          int64            `json:"seq"`
	Stats        map[string]int64 `json:"stats"`
}

// torchCollective names one collective call of one rank.
type torchCollective struct {
	rank int64
	comm string
	op   string
	seq  int64
}

// torchResult is the part of a result log body (contract §5.3) the test reads.
type torchResult struct {
	JobID          string  `json:"job_id"`
	Rank           int64   `json:"rank"`
	StartNs        int64   `json:"interval_start_ns"`
	EndNs          int64   `json:"interval_end_ns"`
	Classification string  `json:"classification"`
	Confidence     float64 `json:"confidence"`
	Collective     *struct {
		CommID    string `json:"comm_id"`
		Op        string `json:"op"`
		Seq       int64  `json:"seq"`
		CommRanks int64  `json:"comm_ranks"`
	} `json:"collective"`
	NCCLAccountedBytes *int64 `json:"nccl_accounted_bytes"`
}

// TestTorchGlooJob runs a 4-rank torch.distributed job on CPU (gloo) instrumented with
// collectiveattr_torch against the built collector. The job's GPU memory is injected: a
// hidden-memory spike at one gradient all_reduce on every rank, which NCCL's (injected)
// accounting says the world communicator holds. The processor must see the job's four
// ranks (samples formed: gpu.memory.hidden per rank), its collectives with their identity
// (marker spans passed through, the evidence result naming the collective), and
// attribute the spike on every rank in both modes, and nothing else.
func TestTorchGlooJob(t *testing.T) {
	collectorBinary(t)
	requireTorch(t)
	const ranks = 4
	ports := freePorts(t, 3)
	healthPort, httpPort, masterPort := ports[0], ports[1], ports[2]
	work := t.TempDir()
	out := filepath.Join(work, "out")
	truthDir := filepath.Join(work, "truth")
	require.NoError(t, os.MkdirAll(out, 0o755))
	configPath := filepath.Join(work, "config.yaml")
	require.NoError(t, os.WriteFile(configPath, fmt.Appendf(nil, torchConfig, healthPort, httpPort, out), 0o644))
	c := startCollector(t, configPath, nil, healthPort)

	jobID := fmt.Sprintf("torch-e2e-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, torchPython, filepath.Join(torchModuleDir(t), "tests", "gloo_job.py"),
		"--ranks", itoa(ranks), "--endpoint", fmt.Sprintf("http://127.0.0.1:%d", httpPort),
		"--job-id", jobID, "--master-port", itoa(masterPort), "--out", truthDir)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1")
	started := time.Now()
	jobOut, err := cmd.CombinedOutput()
	require.NoError(t, err, "gloo job:\n%s", jobOut)
	t.Logf("4-rank gloo job took %s", time.Since(started).Round(time.Millisecond))

	truth := map[int64]rankTruth{}
	var spansSent int64
	for r := range ranks {
		b, err := os.ReadFile(filepath.Join(truthDir, fmt.Sprintf("rank-%d.json", r)))
		require.NoError(t, err)
		var rt rankTruth
		require.NoError(t, json.Unmarshal(b, &rt))
		truth[rt.Rank] = rt
		assert.Zero(t, rt.Stats["dropped_queue_full"]+rt.Stats["dropped_export_failed"], "rank %d dropped nothing: %v", r, rt.Stats)
		assert.Zero(t, rt.Stats["hook_errors"]+rt.Stats["memory_source_errors"], "rank %d: %v", r, rt.Stats)
		assert.Positive(t, rt.Stats["samples_sent"], "rank %d", r)
		spansSent += rt.Stats["spans_sent"]
	}
	require.Len(t, truth, ranks)
	c.stop() // on_job_end: the results are emitted at shutdown
	assert.NotContains(t, c.log(), "panic")

	// The collective spans passed through with their identity and the rank's.
	td := readTraces(t, filepath.Join(out, "traces.json"))
	var passed int64
	commsOf := map[int64]map[string]bool{}
	spanTimes := map[torchCollective][2]int64{}
	for _, rs := range td.ResourceSpans().All() {
		res := rs.Resource().Attributes()
		if job, _ := res.Get(attrJobID); job.Str() != jobID {
			continue
		}
		if svc, _ := res.Get("service.name"); svc.Str() == "collectiveattr" {
			continue // the processor's result spans (contract §5.1)
		}
		rank, ok := res.Get(attrRank)
		require.True(t, ok, "span resource has training.rank")
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				if sp.Name() == resultSpanName {
					continue
				}
				passed++
				comm, ok := sp.Attributes().Get("nccl.comm.id")
				if !ok {
					continue
				}
				seq, hasSeq := sp.Attributes().Get("nccl.seq")
				assert.True(t, hasSeq, "span %s with a communicator has a sequence number", sp.Name())
				op, _ := sp.Attributes().Get("nccl.op")
				spanTimes[torchCollective{rank.Int(), comm.Str(), op.Str(), seq.Int()}] = [2]int64{int64(sp.StartTimestamp()), int64(sp.EndTimestamp())}
				if commsOf[rank.Int()] == nil {
					commsOf[rank.Int()] = map[string]bool{}
				}
				commsOf[rank.Int()][comm.Str()] = true
			}
		}
	}
	assert.Equal(t, spansSent, passed, "every span the ranks sent passed through")
	for r := range int64(ranks) {
		// The world and the rank's pair group.
		assert.Equal(t, map[string]bool{"pg:0": true, fmt.Sprintf("pg:%d", r/2+1): true}, commsOf[r], "communicators of rank %d", r)
	}

	// The processor formed samples of each rank: its hidden-memory gauge per rank.
	hiddenRanks := map[int64]bool{}
	md := readMetrics(t, filepath.Join(out, "metrics.json"))
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() != metricHidden {
					continue
				}
				for _, dp := range m.Gauge().DataPoints().All() {
					if job, _ := dp.Attributes().Get(attrJobID); job.Str() != jobID {
						continue
					}
					if r, ok := dp.Attributes().Get(attrRank); ok {
						hiddenRanks[r.Int()] = true
					}
				}
			}
		}
	}
	assert.Equal(t, map[int64]bool{0: true, 1: true, 2: true, 3: true}, hiddenRanks, "ranks with samples")

	for _, mode := range []string{"reference", "evidence"} {
		results := torchResults(t, filepath.Join(out, mode+"-logs.json"), jobID)
		byRank := map[int64][]torchResult{}
		for _, r := range results {
			byRank[r.Rank] = append(byRank[r.Rank], r)
			tr := truth[r.Rank]
			assert.True(t, r.StartNs <= tr.SpikeEndNs && r.EndNs >= tr.SpikeStartNs,
				"%s: rank %d result [%d, %d] overlaps the injected spike [%d, %d]", mode, r.Rank, r.StartNs, r.EndNs, tr.SpikeStartNs, tr.SpikeEndNs)
			assert.True(t, strings.HasPrefix(r.Classification, "collective_"), "%s: %s", mode, r.Classification)
		}
		for rank := range int64(ranks) {
			require.NotEmpty(t, byRank[rank], "%s mode: a result for rank %d's spike", mode, rank)
			t.Logf("%s rank %d (spike at %s/%s#%d): %s", mode, rank, truth[rank].CommID, truth[rank].Op, truth[rank].Seq, describeResults(byRank[rank]))
		}
		if mode != "evidence" {
			continue
		}
		for rank, rs := range byRank {
			tr := truth[rank]
			found := false
			for _, r := range rs {
				if r.Collective == nil {
					continue
				}
				// NCCL's accounting puts the bytes on the world communicator; the collective
				// named is one of its calls on this rank, co-timed with the spike (the
				// injected spike starts at an all_reduce; a barrier, the other gradient's
				// all_reduce and a broadcast are within a few ms of it).
				assert.Equal(t, tr.CommID, r.Collective.CommID, "rank %d: the spike's communicator", rank)
				assert.Equal(t, int64(ranks), r.Collective.CommRanks, "rank %d: the world's members", rank)
				when, ok := spanTimes[torchCollective{rank, r.Collective.CommID, r.Collective.Op, r.Collective.Seq}]
				if assert.True(t, ok, "rank %d: the named collective %s/%s#%d is one of its spans", rank, r.Collective.CommID, r.Collective.Op, r.Collective.Seq) {
					assert.True(t, when[1] >= tr.SpikeStartNs-int64(250*time.Millisecond) && when[0] <= tr.SpikeEndNs,
						"rank %d: the named collective [%d, %d] is at the spike [%d, %d]", rank, when[0], when[1], tr.SpikeStartNs, tr.SpikeEndNs)
				}
				assert.Equal(t, "collective_confirmed", r.Classification, "rank %d: NCCL's accounting covers the spike", rank)
				if assert.NotNil(t, r.NCCLAccountedBytes, "rank %d", rank) {
					assert.Positive(t, *r.NCCLAccountedBytes)
				}
				found = true
			}
			assert.True(t, found, "evidence mode names the collective of rank %d's spike", rank)
		}
	}
}

func torchResults(t *testing.T, path, jobID string) []torchResult {
	t.Helper()
	var out []torchResult
	ld := readLogs(t, path)
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if lr.Body().Type() != pcommon.ValueTypeStr {
					continue
				}
				var r torchResult
				require.NoError(t, json.Unmarshal([]byte(lr.Body().Str()), &r), "result log body")
				if r.JobID == jobID {
					out = append(out, r)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Rank < out[j].Rank || out[i].Rank == out[j].Rank && out[i].StartNs < out[j].StartNs
	})
	return out
}

func describeResults(rs []torchResult) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %.3f", r.Classification, r.Confidence)
		if r.Collective != nil {
			fmt.Fprintf(&b, " %s/%s#%d", r.Collective.CommID, r.Collective.Op, r.Collective.Seq)
		}
	}
	return b.String()
}
