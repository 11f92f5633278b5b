package deploytest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	// The collector's OTLP exporter compresses with gzip by default.
	_ "google.golang.org/grpc/encoding/gzip"
)

// collector is a running collectiveattr (or agent) process on loopback.
type collector struct {
	*process
	env map[string]string
}

func (c *collector) otlpHTTP() string { return addr(atoi(c.env["OTLP_HTTP_PORT"])) }
func (c *collector) otlpGRPC() string { return addr(atoi(c.env["OTLP_GRPC_PORT"])) }
func (c *collector) metricsURL() string {
	return "http://" + addr(atoi(c.env["PROMETHEUS_PORT"])) + "/metrics"
}

func (c *collector) selfMetricsURL() string {
	return "http://" + addr(atoi(c.env["SELF_METRICS_PORT"])) + "/metrics"
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

// loopbackEnv is the environment the chart gives a collector container, with
// the downward API and every port set for one process on 127.0.0.1.
func loopbackEnv(t testing.TB) map[string]string {
	return map[string]string{
		"POD_IP":            "127.0.0.1",
		"K8S_NODE_NAME":     "gpu-node-1",
		"HEALTH_CHECK_PORT": fmt.Sprint(freePort(t)),
		"SELF_METRICS_PORT": fmt.Sprint(freePort(t)),
		"OTLP_GRPC_PORT":    fmt.Sprint(freePort(t)),
		"OTLP_HTTP_PORT":    fmt.Sprint(freePort(t)),
		"PROMETHEUS_PORT":   fmt.Sprint(freePort(t)),
	}
}

// startCollector runs bin on the chart's config files (files/<name>), in
// order, as the chart's pods do, plus extra config files, and waits until its
// health check answers.
func startCollector(t testing.TB, name, bin string, env map[string]string, files []string, extra ...string) *collector {
	t.Helper()
	var args []string
	for _, f := range files {
		args = append(args, "--config="+filepath.Join(chartDir(t), "files", f))
	}
	for _, f := range extra {
		args = append(args, "--config="+f)
	}
	p := start(t, name, bin, args, env)
	waitHTTP(t, p, "http://"+addr(atoi(env["HEALTH_CHECK_PORT"]))+"/", 60*time.Second)
	return &collector{process: p, env: env}
}

// startNodeLocal runs the collectiveattr distribution on the chart's
// node-local.yaml, verbatim, with result spans going to jaegerOTLP.
func startNodeLocal(t testing.TB, jaegerOTLP string) *collector {
	t.Helper()
	env := loopbackEnv(t)
	env["JAEGER_OTLP_ENDPOINT"] = jaegerOTLP
	env["STORMLOG_GLOB"] = filepath.Join(t.TempDir(), "*.jsonl")
	env["STORMLOG_START_AT"] = "beginning"
	return startCollector(t, "node-local collector", collectorBinary(t), env, []string{"node-local.yaml"})
}

// simulate runs the training-job simulator as fast as the collector takes it,
// sending OTLP/HTTP to endpoint.
func simulate(t testing.TB, endpoint string, args ...string) {
	t.Helper()
	sim := requireBinary(t, "COLLECTIVEATTR_GPUJOBSIM", "bin/gpujobsim", "cli")
	run(t, 3*time.Minute, sim, append([]string{"-fast", "-quiet", "-otlp-endpoint", endpoint}, args...)...)
}

// scrape reads a Prometheus text exposition.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// spanSink is an OTLP/gRPC trace endpoint that keeps what it receives: a
// stand-in for Jaeger where only the Prometheus side is under test.
type spanSink struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.ResourceSpans
	addr  string
}

func startSpanSink(t testing.TB) *spanSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &spanSink{addr: ln.Addr().String()}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, s)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return s
}

func (s *spanSink) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spans = append(s.spans, req.GetResourceSpans()...)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// resultSpans counts the received spans named collective_attribution.
func (s *spanSink) resultSpans() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, rs := range s.spans {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				if sp.GetName() == "collective_attribution" {
					n++
				}
			}
		}
	}
	return n
}
