package e2e

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// validateConfig is a whole collector configuration whose collectiveattr section is
// section (indented by four spaces).
func validateConfig(section string) string {
	return `receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:4318
processors:
  collectiveattr:
` + section + `
exporters:
  debug: {}
service:
  pipelines:
    metrics:
      receivers: [otlp]
      processors: [collectiveattr]
      exporters: [debug]
`
}

// TestValidateRefusesHarmfulValues runs `otelcol-collectiveattr validate` on the values
// issue 16 found accepted: each is refused with its key, the value as written and the
// allowed range. A bool override, which the reference takes as an int, stays valid.
func TestValidateRefusesHarmfulValues(t *testing.T) {
	collectorBinary(t)
	dir := t.TempDir()
	tests := []struct {
		name    string
		section string
		want    []string // all in the output; none: validate succeeds
	}{
		{"window without unit", "    window: 5", []string{"window: 5 has no unit", "5s"}},
		{"window too short", "    window: 500ms", []string{"window must be >= 1s, got 500ms"}},
		{"evaluation interval of 1ns", "    evaluation_interval: 1ns", []string{"evaluation_interval must be >= 100ms, got 1ns"}},
		{"empty device_used", "    metrics:\n      device_used: []", []string{"metrics.device_used must list at least one metric name, got []"}},
		{"max_jobs past int64", "    limits:\n      max_jobs: 9223372036854775808", []string{"limits.max_jobs must be an integer in [1, 9223372036854775807], got 9223372036854775808"}},
		{"fractional limit", "    limits:\n      max_events_per_rank: 2.5", []string{"limits.max_events_per_rank", "got 2.5"}},
		{"settle_delay past window", "    window: 2s\n    settle_delay: 3s", []string{"settle_delay must be < window (2s)"}},
		{"emit_timeout too short", "    emit_timeout: 1ms", []string{"emit_timeout must be >= 100ms, got 1ms"}},
		{"bool override", "    overrides:\n      min_gap_bytes: true", nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "config-"+itoa(i)+".yaml")
			require.NoError(t, os.WriteFile(path, []byte(validateConfig(tt.section)), 0o644))
			out, err := runCommand(t, nil, "validate", "--config", path)
			if tt.want == nil {
				assert.NoError(t, err, "validate:\n%s", out)
				return
			}
			require.Error(t, err, "validate accepted:\n%s", tt.section)
			for _, w := range tt.want {
				assert.Contains(t, out, w)
			}
		})
	}
}

// postOTLP sends one OTLP/HTTP request (protobuf) and returns the response status, or 0
// when the request failed (a timeout, say).
func postOTLP(t *testing.T, url string, body []byte, timeout time.Duration) int {
	t.Helper()
	client := &http.Client{Timeout: timeout}
	resp, err := client.Post(url, "application/x-protobuf", bytes.NewReader(body)) //nolint:noctx // a loopback test client
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func postMetrics(t *testing.T, port int, md pmetric.Metrics) {
	t.Helper()
	// An OTLP export request is wire-identical to MetricsData.
	body, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, postOTLP(t, "http://127.0.0.1:"+itoa(port)+"/v1/metrics", body, 10*time.Second))
}

// gauges builds one resource of gauges: name → points (time, value).
func gauges(res map[string]any, name string, pts [][2]int64, attrs map[string]any) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	_ = rm.Resource().Attributes().FromRaw(res)
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName(name)
	dps := m.SetEmptyGauge().DataPoints()
	for _, p := range pts {
		dp := dps.AppendEmpty()
		dp.SetTimestamp(pcommon.Timestamp(p[0]))
		dp.SetIntValue(p[1])
		_ = dp.Attributes().FromRaw(attrs)
	}
	return md
}

// TestDeviceJoinKeepsJobsApart: job A's rank 3 reports its allocator memory with
// host.name and gpu.index once. Job B's DCGM points for the same GPU carry B's job id:
// they must not become A's samples. DCGM points without a job id join A's rank 3 only
// until identity_ttl after A's own last item, however often they use the mapping.
// Before the fix B's points were buffered as A's rank 3, and the joins kept the
// mapping alive for ever.
func TestDeviceJoinKeepsJobsApart(t *testing.T) {
	ports := freePorts(t, 3)
	httpPort, healthPort, telemetryPort := ports[0], ports[1], ports[2]
	out := t.TempDir()
	config := collectorConfig{
		healthPort:    healthPort,
		telemetryPort: telemetryPort,
		receivers:     otlpHTTPReceiver("otlp", httpPort),
		processors:    "collectiveattr:\n  evaluation_interval: 500ms\n  identity_ttl: 2s",
		exporters:     "file/metrics:\n  path: " + filepath.Join(out, "metrics.json"),
		pipelines:     pipeline("metrics", "otlp", "collectiveattr", "file/metrics"),
	}.write(t, out, "config.yaml")
	c := startCollector(t, config, nil, healthPort)

	const (
		mib      = int64(1) << 20
		reserved = 1024 * mib
		bUsed    = 5000 // MiB, job B's points
		freeUsed = 3000 // MiB, points without a job id
		ttl      = 2 * time.Second
		step     = int64(100 * time.Millisecond)
	)
	t0 := time.Now()
	start := t0.UnixNano() / step * step
	// A's allocator points for the next 5 s, in one request: the only item of A naming
	// its host and device, so the mapping's owner goes quiet right after it.
	var resv [][2]int64
	for k := range int64(50) {
		resv = append(resv, [2]int64{start + k*step, reserved})
	}
	postMetrics(t, httpPort, gauges(map[string]any{"training.job.id": "A", "training.rank": int64(3), "host.name": "node-a", "gpu.index": int64(3)},
		"gpu.memory.allocator.reserved", resv, nil))
	// B's DCGM points for the same GPU, with B's job id.
	var bPts [][2]int64
	for k := range int64(5) {
		bPts = append(bPts, [2]int64{start + k*step, bUsed})
	}
	postMetrics(t, httpPort, gauges(nil, "DCGM_FI_DEV_FB_USED", bPts, map[string]any{"Hostname": "node-a", "gpu": "3", "training.job.id": "B"}))
	// Then DCGM points without a job id, in real time, for twice the TTL.
	for time.Since(t0) < 2*ttl {
		ts := time.Now().UnixNano()
		postMetrics(t, httpPort, gauges(nil, "DCGM_FI_DEV_FB_USED", [][2]int64{{ts, freeUsed}}, map[string]any{"Hostname": "node-a", "gpu": "3"}))
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second) // a last evaluation round reports the hidden points
	telemetry := scrape(t, "http://127.0.0.1:"+itoa(telemetryPort)+"/metrics")
	c.stop()

	var fromB, joined, late int
	md := readMetrics(t, filepath.Join(out, "metrics.json"))
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() != "gpu.memory.hidden" {
					continue
				}
				for _, dp := range m.Gauge().DataPoints().All() {
					switch dp.IntValue() {
					case bUsed*mib - reserved:
						fromB++
					case freeUsed*mib - reserved:
						joined++
						if time.Unix(0, int64(dp.Timestamp())).Sub(t0) > ttl+500*time.Millisecond {
							late++
						}
					}
				}
			}
		}
	}
	assert.Zero(t, fromB, "job B's points became job A's samples")
	assert.Positive(t, joined, "points without a job id join A's rank 3 while its mapping lives")
	assert.Zero(t, late, "points joined past identity_ttl after the owner's last item")
	assert.Regexp(t, `otelcol_processor_collectiveattr_items_skipped(_total)?\{[^}]*reason="unjoinable"[^}]*\} [1-9]`, telemetry)
}

// blackHole accepts connections and never answers: a downstream that hangs every send.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// stormlogBody is a valid TelemetryEvent v2 record of rank of job.
func stormlogBody(job string, rank, world, ts int64, eventType string, gap int64) string {
	const reserved = int64(10) << 30
	used := reserved + gap
	return fmt.Sprintf(`{"schema_version":2,"timestamp_ns":%d,"event_type":%q,"collector":"stormlog.cuda_tracker",`+
		`"sampling_interval_ms":100,"pid":%d,"host":"node-0","job_id":%q,"rank":%d,"local_rank":%d,"world_size":%d,`+
		`"device_id":%d,"allocator_allocated_bytes":%d,"allocator_reserved_bytes":%d,"allocator_active_bytes":null,`+
		`"allocator_inactive_bytes":null,"allocator_change_bytes":0,"device_used_bytes":%d,"device_free_bytes":%d,`+
		`"device_total_bytes":%d,"context":null,"metadata":{}}`,
		ts, eventType, 1000+rank, job, rank, rank, world, rank, reserved, reserved, used, (80<<30)-used, int64(80)<<30)
}

// spikyJobLogs is 3 s of a 2-rank job sampled at 10 Hz with a collective spike at 1.5 s.
func spikyJobLogs(job string, t0 int64) plog.Logs {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	const step = int64(100 * time.Millisecond)
	for i := range int64(30) {
		ts := t0 + i*step
		for r := range int64(2) {
			gap := int64(100<<20) + (i*7919%13)<<20
			if i == 15 {
				gap = 2 << 30
				lrs.AppendEmpty().Body().SetStr(stormlogBody(job, r, 2, ts, "collective", 0))
			}
			lrs.AppendEmpty().Body().SetStr(stormlogBody(job, r, 2, ts, "sample", gap))
		}
	}
	return ld
}

// TestShutdownWithDeadDownstream: the results' exporter sends to an endpoint that
// accepts and never answers, with its sending queue off and a 60 s retry budget, as in
// issue 16 (where SIGTERM did not finish in 150 s). Results go to the exporter off the
// evaluation goroutine with a deadline, and shutdown waits for the downstream at most
// emit_timeout in all: the collector exits cleanly within a few seconds. The
// configuration holds no key the collector before the fix lacks, so the same test runs
// against that one.
func TestShutdownWithDeadDownstream(t *testing.T) {
	ports := freePorts(t, 3)
	httpPort, healthPort, telemetryPort := ports[0], ports[1], ports[2]
	dead := blackHole(t)
	dir := t.TempDir()
	config := collectorConfig{
		healthPort:    healthPort,
		telemetryPort: telemetryPort,
		receivers:     otlpHTTPReceiver("otlp", httpPort),
		processors:    "collectiveattr:\n  evaluation_interval: 500ms\n  settle_delay: 1s",
		exporters: fmt.Sprintf(`otlp_http/dead:
  endpoint: http://%s
  timeout: 60s
  sending_queue:
    enabled: false
  retry_on_failure:
    enabled: true
    max_elapsed_time: 60s`, dead),
		pipelines: pipeline("logs", "otlp", "collectiveattr", "otlp_http/dead"),
	}.write(t, dir, "config.yaml")
	c := startCollector(t, config, nil, healthPort)

	// The pass-through of the input hangs on the dead exporter too: the client gives up
	// after a second, by which time the processor has buffered the batch.
	body, err := (&plog.ProtoMarshaler{}).MarshalLogs(spikyJobLogs("dead-downstream", time.Now().Add(-4*time.Second).UnixNano()))
	require.NoError(t, err)
	postOTLP(t, "http://127.0.0.1:"+itoa(httpPort)+"/v1/logs", body, time.Second)
	// The spike settles on the first evaluation; its result batch then hangs in the
	// exporter until emit_timeout.
	telemetryURL := "http://127.0.0.1:" + itoa(telemetryPort) + "/metrics"
	waitFor(t, 20*time.Second, "a result emitted", func() bool {
		return strings.Contains(scrape(t, telemetryURL), "otelcol_processor_collectiveattr_results_emitted")
	})
	// Feed more while the first batch hangs: ingestion does not wait for it.
	body2, err := (&plog.ProtoMarshaler{}).MarshalLogs(spikyJobLogs("dead-downstream-2", time.Now().Add(-4*time.Second).UnixNano()))
	require.NoError(t, err)
	postOTLP(t, "http://127.0.0.1:"+itoa(httpPort)+"/v1/logs", body2, time.Second)
	time.Sleep(time.Second)

	start := time.Now()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-c.done:
		c.exited, c.exitErr = true, err
	case <-time.After(shutdownTimeout):
		t.Fatalf("collector did not stop within %s of SIGTERM:\n%s", shutdownTimeout, c.logTail(40))
	}
	took := time.Since(start)
	t.Logf("shutdown with a dead downstream took %s", took.Round(10*time.Millisecond))
	require.NoError(t, c.exitErr, "exit status:\n%s", c.logTail(40))
	// emit_timeout (5 s by default) bounds the wait for the downstream.
	assert.Less(t, took, 15*time.Second, "SIGTERM to exit")
	assert.Regexp(t, `"reason": "(timeout|shutdown)"`, c.log(), "the undelivered batches are logged with their reason")
}
