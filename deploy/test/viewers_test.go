package deploytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The viewer tests run real Jaeger v2, Prometheus and collector processes on
// 127.0.0.1; `make test-viewers` builds and installs what they need and sets
// COLLECTIVEATTR_VIEWERS=1.
func requireViewers(t *testing.T) {
	t.Helper()
	if os.Getenv("COLLECTIVEATTR_VIEWERS") != "1" {
		t.Skip("run by `make test-viewers` (real Jaeger, Prometheus and multi-node processes)")
	}
}

// jaeger is a Jaeger v2 all-in-one process with in-memory storage.
type jaeger struct {
	otlpGRPC string // where collectors send spans
	query    string // HTTP query API base URL
}

func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := requireBinary(t, "COLLECTIVEATTR_JAEGER", ".tools/jaeger", "build-jaeger")
	otlp, httpQuery, grpcQuery, health := freePort(t), freePort(t), freePort(t), freePort(t)
	cfg := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:%d
  jaeger_query:
    # On by default, Jaeger's own tracing exports to localhost:4317, where
    # nothing listens here, and its retries held Jaeger's shutdown past the
    # 30 s the harness waits after SIGTERM.
    enable_tracing: false
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
processors:
  batch: {}
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`, health, httpQuery, grpcQuery, otlp)
	path := writeFile(t, t.TempDir(), "jaeger.yaml", cfg)
	p := start(t, "jaeger", bin, []string{"--config=" + path}, nil)
	j := &jaeger{otlpGRPC: addr(otlp), query: "http://" + addr(httpQuery)}
	waitHTTP(t, p, j.query+"/api/services", 60*time.Second)
	return j
}

// jaegerSpan is a span as Jaeger's HTTP query API returns it.
type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags      []jaegerTag `json:"tags"`
	ProcessID string      `json:"processID"`
}

type jaegerTag struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

type jaegerTrace struct {
	TraceID   string       `json:"traceID"`
	Spans     []jaegerSpan `json:"spans"`
	Processes map[string]struct {
		ServiceName string      `json:"serviceName"`
		Tags        []jaegerTag `json:"tags"`
	} `json:"processes"`
}

func (j *jaeger) traces(query url.Values) ([]jaegerTrace, error) {
	return getJSON[[]jaegerTrace](j.query + "/api/traces?" + query.Encode())
}

func (j *jaeger) trace(id string) ([]jaegerTrace, error) {
	return getJSON[[]jaegerTrace](j.query + "/api/traces/" + id)
}

// getJSON reads Jaeger's and Prometheus's API envelopes: {"data": ...}.
func getJSON[T any](u string) (T, error) {
	var envelope struct {
		Data   T      `json:"data"`
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	resp, err := http.Get(u)
	if err != nil {
		return envelope.Data, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return envelope.Data, err
	}
	if resp.StatusCode != http.StatusOK {
		return envelope.Data, fmt.Errorf("GET %s: %s: %s", u, resp.Status, tail(string(b), 500))
	}
	if err := json.Unmarshal(b, &envelope); err != nil {
		return envelope.Data, fmt.Errorf("GET %s: %w", u, err)
	}
	return envelope.Data, nil
}

func tagMap(tags []jaegerTag) map[string]any {
	m := map[string]any{}
	for _, tg := range tags {
		m[tg.Key] = tg.Value
	}
	return m
}

// resultSpan is a collective_attribution span with its resource tags.
type resultSpan struct {
	jaegerSpan
	tags     map[string]any
	resource map[string]any
}

func resultSpansOf(traces []jaegerTrace) []resultSpan {
	var out []resultSpan
	for _, tr := range traces {
		for _, sp := range tr.Spans {
			if sp.OperationName != "collective_attribution" {
				continue
			}
			out = append(out, resultSpan{jaegerSpan: sp, tags: tagMap(sp.Tags), resource: tagMap(tr.Processes[sp.ProcessID].Tags)})
		}
	}
	return out
}

// prometheus is Debian's Prometheus 2.42 scraping the given targets every second.
type prometheus struct{ url string }

func startPrometheus(t *testing.T, targets ...string) *prometheus {
	t.Helper()
	return startPrometheusEvery(t, time.Second, targets...)
}

// startPrometheusEvery runs Prometheus scraping targets every interval.
func startPrometheusEvery(t *testing.T, interval time.Duration, targets ...string) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus not on PATH: `make install-prometheus` (apt-get install prometheus)")
	}
	port := freePort(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: collectiveattr\n    static_configs:\n      - targets: [", model.Duration(interval))
	for i, tg := range targets {
		if i > 0 {
			cfg += ", "
		}
		cfg += "'" + tg + "'"
	}
	cfg += "]\n"
	path := writeFile(t, dir, "prometheus.yml", cfg)
	p := start(t, "prometheus", bin, []string{
		"--config.file=" + path,
		"--storage.tsdb.path=" + filepath.Join(dir, "tsdb"),
		"--web.listen-address=" + addr(port),
	}, nil)
	pr := &prometheus{url: "http://" + addr(port)}
	waitHTTP(t, p, pr.url+"/-/ready", 60*time.Second)
	return pr
}

type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
}

func (p *prometheus) query(q string) ([]promSample, error) {
	data, err := getJSON[struct {
		ResultType string       `json:"resultType"`
		Result     []promSample `json:"result"`
	}](p.url + "/api/v1/query?" + url.Values{"query": {q}}.Encode())
	return data.Result, err
}

// TestViewerNodeLocal: the node-local config, verbatim, exporting to a real
// Jaeger v2 and scraped by a real Prometheus; a simulated 16-rank job; the
// results are found through both viewers' HTTP APIs, and every query of the
// Grafana dashboard returns data from Prometheus.
func TestViewerNodeLocal(t *testing.T) {
	requireViewers(t)
	j := startJaeger(t)
	col := startNodeLocal(t, j.otlpGRPC)
	prom := startPrometheus(t, addr(atoi(col.env["PROMETHEUS_PORT"])), addr(atoi(col.env["SELF_METRICS_PORT"])))
	const job = "viewer-node-local"
	simulate(t, col.otlpHTTP(), "-job-id", job)
	// A point without a rank: a skip for the self-telemetry panel to show.
	postOTLP(t, col.otlpHTTP(), "metrics", gaugeRequest(nil, "gpu.memory.allocator.reserved", time.Now(), 1))

	t.Run("jaeger", func(t *testing.T) {
		var results []resultSpan
		eventually(t, 90*time.Second, time.Second, func() error {
			traces, err := j.traces(url.Values{"service": {"collectiveattr"}, "limit": {"2000"}, "lookback": {"2h"}})
			if err != nil {
				return err
			}
			results = resultSpansOf(traces)
			if len(results) == 0 {
				return fmt.Errorf("no collective_attribution spans in %d traces of service collectiveattr", len(traces))
			}
			return nil
		})
		linked := 0
		for _, r := range results {
			assert.Equal(t, job, r.resource["training.job.id"])
			for _, key := range []string{
				"training.rank", "training.world_size",
				"collective_attribution.classification", "collective_attribution.confidence",
				"collective_attribution.preset", "collective_attribution.reason_codes",
				"collective_attribution.evidence.synchronized_ranks", "collective_attribution.evidence.marker_hits",
			} {
				assert.Contains(t, r.tags, key, "result span %s", r.SpanID)
			}
			assert.Contains(t, []any{"collective_confident", "collective_likely", "collective_suspect"}, r.tags["collective_attribution.classification"])
			if len(r.References) > 0 {
				linked++
			}
		}
		require.Positive(t, linked, "result spans link the NCCL spans that contributed")

		// A link leads to an NCCL collective span of the training job,
		// stored in Jaeger too.
		var ref = results[0].References
		for _, r := range results {
			if len(r.References) > 0 {
				ref = r.References
				break
			}
		}
		target := ref[len(ref)-1]
		traces, err := j.trace(target.TraceID)
		require.NoError(t, err)
		var found *jaegerSpan
		var service string
		for _, tr := range traces {
			for i, sp := range tr.Spans {
				if sp.SpanID == target.SpanID {
					found, service = &tr.Spans[i], tr.Processes[sp.ProcessID].ServiceName
				}
			}
		}
		require.NotNil(t, found, "linked span %s/%s is in Jaeger", target.TraceID, target.SpanID)
		assert.Equal(t, "trainer", service)
		assert.Contains(t, tagMap(found.Tags), "nccl.collective", "the linked span is an NCCL collective (%s)", found.OperationName)
	})

	t.Run("prometheus", func(t *testing.T) {
		eventually(t, 90*time.Second, time.Second, func() error {
			res, err := prom.query(`collective_attribution_intervals_total{training_job_id="` + job + `"}`)
			if err != nil {
				return err
			}
			if len(res) == 0 {
				return fmt.Errorf("no collective_attribution_intervals_total series for %s yet", job)
			}
			return nil
		})
		// increase() over the rate interval needs two scrapes of the counter.
		time.Sleep(3 * time.Second)
		for _, q := range loadDashboard(t).queries(t) {
			if failureOnly(q) {
				continue // no series until something fails (onlyAfterAFailure)
			}
			expr := grafanaVars.Replace(q.expr)
			if len(q.labels) > 0 {
				// Legend and label_values labels must be on the result.
				expr = fmt.Sprintf("count by (%s) (%s)", strings.Join(q.labels, ", "), expr)
			}
			res, err := prom.query(expr)
			require.NoError(t, err, q.where)
			assert.NotEmpty(t, res, "%s: %s returned nothing", q.where, expr)
			for _, s := range res {
				for _, l := range q.labels {
					assert.NotEmpty(t, s.Metric[l], "%s: label %s", q.where, l)
				}
			}
		}
	})
}
