package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// inspectorConfig is a collector with two processors fed the same simulated job: the
// "spans" one gets the memory gauges and the NCCL marker spans over OTLP, the
// "inspector" one the same gauges over OTLP and the markers only as NCCL Inspector logs
// read by filelog, joined to the ranks by the gauges' resource host.name + process.pid.
const inspectorConfig = `extensions:
  health_check:
    endpoint: 127.0.0.1:%[1]d
receivers:
  otlp/spans:
    protocols:
      http:
        endpoint: 127.0.0.1:%[2]d
  otlp/inspector:
    protocols:
      http:
        endpoint: 127.0.0.1:%[3]d
  filelog/inspector:
    include: [%[4]s]
    start_at: beginning
    max_log_size: 1MiB
processors:
  collectiveattr/spans:
    mode: %[6]s
    emit: on_job_end
    phases: false
    evaluation_interval: 500ms
    job_idle_timeout: 10m
  collectiveattr/inspector:
    mode: %[6]s
    emit: on_job_end
    phases: false
    evaluation_interval: 500ms
    job_idle_timeout: 10m
    nccl_inspector:
      hold: 10m
exporters:
  file/spans_traces:
    path: %[5]s/spans-traces.json
  file/spans_metrics:
    path: %[5]s/spans-metrics.json
  file/spans_logs:
    path: %[5]s/spans-logs.json
  file/inspector_metrics:
    path: %[5]s/inspector-metrics.json
  file/inspector_logs:
    path: %[5]s/inspector-logs.json
service:
  extensions: [health_check]
  pipelines:
    traces/spans:
      receivers: [otlp/spans]
      processors: [collectiveattr/spans]
      exporters: [file/spans_traces]
    metrics/spans:
      receivers: [otlp/spans]
      processors: [collectiveattr/spans]
      exporters: [file/spans_metrics]
    logs/spans:
      receivers: [otlp/spans]
      processors: [collectiveattr/spans]
      exporters: [file/spans_logs]
    metrics/inspector:
      receivers: [otlp/inspector]
      processors: [collectiveattr/inspector]
      exporters: [file/inspector_metrics]
    logs/inspector:
      receivers: [filelog/inspector]
      processors: [collectiveattr/inspector]
      exporters: [file/inspector_logs]
`

// TestInspectorMarkersEqualMarkerSpans: a simulated 16-rank job whose markers come only
// from NCCL Inspector logs (verbose layout, filelog) and whose memory comes over OTLP gives
// the results of the same job with OTLP marker spans, in reference mode (emit: on_job_end).
// Inspector records hold µs: the marker spans' times are cut to the µs the simulator's
// Inspector records hold, so that the two inputs name the same instants and the results are
// compared exactly.
func TestInspectorMarkersEqualMarkerSpans(t *testing.T) {
	run := runInspectorAgainstSpans(t, inspectorRun{mode: "reference", verbose: true})
	want, got := run.fromSpans, run.fromInspector
	require.Len(t, got, len(want))
	withMarkers := 0
	for _, r := range got {
		ev, _ := r["evidence"].(map[string]any)
		if hits, ok := ev["marker_hits"].(json.Number); ok && hits != "0" {
			withMarkers++
		}
	}
	assert.Positive(t, withMarkers, "the Inspector markers count as marker hits")
	for i := range want {
		assert.Equal(t, compact(want[i]), compact(got[i]), "result %d", i)
	}
}

// inspectorRun is one run of inspectorConfig: the attribution mode of both processors,
// the Inspector layout, and whether the job exports NCCL's accounting gauge.
type inspectorRun struct {
	mode    string
	verbose bool
	stats   bool
}

// inspectorOutcome is what a run gave: the results of the marker-span processor and of
// the Inspector one (sorted), and what was sent.
type inspectorOutcome struct {
	fromSpans, fromInspector []map[string]any
	scenario                 *jobsim.Scenario
	epoch                    time.Time
	// outDir holds the file exporters' outputs (spans-logs.json, inspector-logs.json).
	outDir string
	// spanCollectives maps (rank, start ns) of every NCCL marker span sent to its
	// collective identity; inspectorCollectives the same for the Inspector records.
	spanCollectives, inspectorCollectives map[rankStart]collectiveID
}

type rankStart struct{ rank, startNs int64 }

// collectiveID is a collective's identity as a result names it.
type collectiveID struct {
	comm, op string
	seq      int64
}

// runInspectorAgainstSpans runs inspectorConfig on the default simulated job: the
// Inspector logs are written before the collector starts and tailed from their
// beginning, the memory gauges go to both processors over OTLP, the marker spans (times
// cut to the µs) to the spans processor only.
func runInspectorAgainstSpans(t *testing.T, run inspectorRun) inspectorOutcome {
	t.Helper()
	collectorBinary(t)
	work := t.TempDir()
	dumpDir := filepath.Join(work, "nccl-inspector")
	out := filepath.Join(work, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))

	cfg := jobsim.DefaultConfig()
	cfg.NCCLStats = run.stats
	s, err := jobsim.NewScenario(cfg)
	require.NoError(t, err)
	epoch := time.Now().Add(-cfg.Duration).Truncate(time.Millisecond)
	const flush = time.Second

	// The plugin's files exist before the collector reads them from their beginning.
	logs, err := s.NewInspectorLogs(dumpDir, run.verbose, epoch)
	require.NoError(t, err)
	for from := time.Duration(0); from < cfg.Duration; from += flush {
		require.NoError(t, logs.Write(from, min(from+flush, cfg.Duration)))
	}
	require.NoError(t, logs.Close())
	require.Positive(t, logs.Records)

	ports := freePorts(t, 3)
	healthPort, spansPort, inspPort := ports[0], ports[1], ports[2]
	configPath := filepath.Join(work, "config.yaml")
	require.NoError(t, os.WriteFile(configPath, fmt.Appendf(nil, inspectorConfig,
		healthPort, spansPort, inspPort, yamlString(filepath.Join(dumpDir, "*.log")), out, run.mode), 0o644))
	c := startCollector(t, configPath, nil, healthPort)

	inspLogs := filepath.Join(out, "inspector-logs.json")
	waitFor(t, 2*time.Minute, fmt.Sprintf("%d Inspector records to pass through", logs.Records), func() bool {
		passed, _ := countLogRecords(t, inspLogs)
		return passed >= logs.Records
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spans := jobsim.NewOTLPSender("127.0.0.1:" + itoa(spansPort))
	insp := jobsim.NewOTLPSender("127.0.0.1:" + itoa(inspPort))
	o := inspectorOutcome{scenario: s, epoch: epoch, outDir: out, spanCollectives: map[rankStart]collectiveID{}, inspectorCollectives: map[rankStart]collectiveID{}}
	markerSpans := 0
	for from := time.Duration(0); from < cfg.Duration; from += flush {
		to := min(from+flush, cfg.Duration)
		md := s.Metrics(from, to, epoch, jobsim.DeviceFromOTLP)
		require.NoError(t, insp.SendMetrics(ctx, md))
		require.NoError(t, spans.SendMetrics(ctx, md))
		td := s.Traces(from, to, epoch)
		markerSpans += truncateSpansToMicros(td)
		noteSpanCollectives(td, o.spanCollectives)
		require.NoError(t, spans.SendTraces(ctx, td))
	}
	c.stop()
	assert.NotContains(t, c.log(), "panic")
	for r := range cfg.Ranks {
		for _, op := range s.InspectorOps(r, 0, cfg.Duration, epoch) {
			o.inspectorCollectives[rankStart{int64(r), op.StartNs}] = collectiveID{op.CommID, op.Op, op.Seq}
		}
	}

	passed, _ := countLogRecords(t, inspLogs)
	assert.Equal(t, logs.Records, passed, "every Inspector record passes through once")
	o.fromSpans = resultBodies(t, filepath.Join(out, "spans-logs.json"))
	o.fromInspector = resultBodies(t, filepath.Join(out, "inspector-logs.json"))
	t.Logf("%s mode, verbose %v, accounting %v: %d Inspector records, %d marker spans; %d results from spans, %d from Inspector logs",
		run.mode, run.verbose, run.stats, logs.Records, markerSpans, len(o.fromSpans), len(o.fromInspector))
	require.NotEmpty(t, o.fromSpans)
	return o
}

// noteSpanCollectives records the collective identity of every NCCL marker span of td by
// rank and start.
func noteSpanCollectives(td ptrace.Traces, into map[rankStart]collectiveID) {
	for _, rs := range td.ResourceSpans().All() {
		rank, _ := rs.Resource().Attributes().Get("training.rank")
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				a := sp.Attributes()
				comm, ok := a.Get("nccl.comm.id")
				if !ok {
					continue
				}
				op, _ := a.Get("nccl.op")
				seq, _ := a.Get("nccl.seq")
				into[rankStart{rank.Int(), int64(sp.StartTimestamp())}] = collectiveID{comm.Str(), op.Str(), seq.Int()}
			}
		}
	}
}

// truncateSpansToMicros cuts every span's times down to the µs and returns the number of
// NCCL spans.
func truncateSpansToMicros(td ptrace.Traces) int {
	n := 0
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				sp.SetStartTimestamp(sp.StartTimestamp() / 1000 * 1000)
				sp.SetEndTimestamp(sp.EndTimestamp() / 1000 * 1000)
				if strings.HasPrefix(sp.Name(), "nccl:") {
					n++
				}
			}
		}
	}
	return n
}

// resultBodies are the result log records' bodies of a file exporter's output, sorted.
func resultBodies(t *testing.T, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, rl := range readLogs(t, path).ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if _, ok := lr.Attributes().Get(attrClassification); !ok {
					continue
				}
				var body map[string]any
				dec := json.NewDecoder(strings.NewReader(lr.Body().AsString()))
				dec.UseNumber()
				require.NoError(t, dec.Decode(&body), "result log body is JSON")
				out = append(out, body)
			}
		}
	}
	sortResults(out)
	return out
}
