package deploytest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

// TestViewerMultiNode runs the multi-node tier as real processes: two agents
// (the agent distribution on the chart's agent.yaml, with a static resolver
// in place of the in-cluster one) in front of two gateways (collectiveattr on
// the chart's gateway.yaml). Simulated 16-rank jobs on two hosts send each
// host's telemetry to that host's agent. Every job must end up whole on one
// gateway, and the attribution must see the synchrony across both hosts.
func TestViewerMultiNode(t *testing.T) {
	requireViewers(t)
	j := startJaeger(t)

	var gateways []*collector
	var hostnames []string
	for i := range 2 {
		env := loopbackEnv(t)
		env["JAEGER_OTLP_ENDPOINT"] = j.otlpGRPC
		gw := startCollector(t, fmt.Sprintf("gateway-%d", i), collectorBinary(t), env, []string{"gateway.yaml"})
		gateways = append(gateways, gw)
		hostnames = append(hostnames, gw.otlpGRPC())
	}
	static := writeFile(t, t.TempDir(), "resolver-static.yaml", fmt.Sprintf(
		"exporters:\n  loadbalancing:\n    resolver:\n      static:\n        hostnames: [%s, %s]\n", hostnames[0], hostnames[1]))
	var agents []*collector
	for i := range 2 {
		env := loopbackEnv(t)
		env["DCGM_JOB_POD_PATTERN"] = "^(.+)-worker-[0-9]+$"
		agents = append(agents, startCollector(t, fmt.Sprintf("agent-%d", i), agentBinary(t), env, []string{"agent.yaml"}, static))
	}
	nodes := startNodeFanout(t, agents[0].otlpHTTP(), agents[1].otlpHTTP())

	jobs := []string{"multi-node-job-a", "multi-node-job-b", "multi-node-job-c"}
	var wg sync.WaitGroup
	for i, job := range jobs {
		wg.Go(func() { simulate(t, nodes.addr, "-job-id", job, "-seed", fmt.Sprint(i+1)) })
	}
	wg.Wait()
	require.Len(t, nodes.hostsSeen(), 2, "the jobs' ranks sit on two hosts, one agent each")

	// Each job's series, results and pass-through alike, on exactly one gateway.
	home := map[string]int{}
	eventually(t, 120*time.Second, time.Second, func() error {
		for _, job := range jobs {
			var on []int
			for g, gw := range gateways {
				families, err := scrape(gw.metricsURL())
				if err != nil {
					return err
				}
				if seriesWith(families, selectorNeeds{metric: "collective_attribution_intervals_total", labels: []string{"training_job_id"}}) != nil {
					continue
				}
				if hasJob(families, job) {
					on = append(on, g)
				}
			}
			if len(on) != 1 {
				return fmt.Errorf("job %s has series on gateways %v, want exactly one with results", job, on)
			}
			home[job] = on[0]
		}
		return nil
	})
	for g, gw := range gateways {
		families, err := scrape(gw.metricsURL())
		require.NoError(t, err)
		for _, job := range jobs {
			if home[job] != g {
				assert.False(t, hasJob(families, job), "job %s (home gateway %d) leaked to gateway %d", job, home[job], g)
			}
		}
	}
	t.Logf("gateway of each job: %v", home)

	// Cross-host synchrony: result spans whose evidence counts more ranks
	// than one host holds, for ranks on both hosts.
	for _, job := range jobs {
		var results []resultSpan
		eventually(t, 60*time.Second, time.Second, func() error {
			traces, err := j.traces(url.Values{"service": {"collectiveattr"}, "limit": {"5000"}, "lookback": {"2h"}})
			if err != nil {
				return err
			}
			results = results[:0]
			for _, r := range resultSpansOf(traces) {
				if r.resource["training.job.id"] == job {
					results = append(results, r)
				}
			}
			if len(results) == 0 {
				return fmt.Errorf("no result spans for %s", job)
			}
			return nil
		})
		maxSync := 0.0
		hosts := map[any]bool{}
		for _, r := range results {
			if v, ok := r.tags["collective_attribution.evidence.synchronized_ranks"].(float64); ok && v > maxSync {
				maxSync = v
			}
			hosts[r.resource["host.name"]] = true
		}
		t.Logf("job %s: %d result spans, at most %.0f synchronized ranks, ranks on hosts %v", job, len(results), maxSync, hosts)
		assert.Greater(t, maxSync, 8.0, "job %s: synchrony seen across both 8-GPU hosts", job)
		assert.Len(t, hosts, 2, "job %s: results for ranks of both hosts", job)
	}
}

func hasJob(families map[string]*dto.MetricFamily, job string) bool {
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "training_job_id" && lp.GetValue() == job {
					return true
				}
			}
		}
	}
	return false
}

// nodeFanout stands in for the nodes of a cluster: the simulator sends all
// ranks to one OTLP/HTTP endpoint, and the fan-out forwards each resource
// (one rank) to the agent of that rank's host, as each node's training pods
// send to their own node's agent. It routes by host, never by job: that is
// the agents' job.
type nodeFanout struct {
	addr   string
	agents []string
	mu     sync.Mutex
	hosts  map[string]int
}

func startNodeFanout(t *testing.T, agents ...string) *nodeFanout {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &nodeFanout{addr: ln.Addr().String(), agents: agents, hosts: map[string]int{}}
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return f
}

func (f *nodeFanout) hostsSeen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var hs []string
	for h := range f.hosts {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	return hs
}

// agentFor gives each new host the next agent in turn.
func (f *nodeFanout) agentFor(host string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, ok := f.hosts[host]
	if !ok {
		i = len(f.hosts) % len(f.agents)
		f.hosts[host] = i
	}
	return i
}

func hostOf(r *resourcepb.Resource) string {
	for _, kv := range r.GetAttributes() {
		if kv.GetKey() == "host.name" {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

func (f *nodeFanout) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	per := map[int]proto.Message{}
	switch r.URL.Path {
	case "/v1/metrics":
		var req colmetricspb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range req.GetResourceMetrics() {
			i := f.agentFor(hostOf(rm.GetResource()))
			if per[i] == nil {
				per[i] = &colmetricspb.ExportMetricsServiceRequest{}
			}
			m := per[i].(*colmetricspb.ExportMetricsServiceRequest)
			m.ResourceMetrics = append(m.ResourceMetrics, rm)
		}
	case "/v1/traces":
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.GetResourceSpans() {
			i := f.agentFor(hostOf(rs.GetResource()))
			if per[i] == nil {
				per[i] = &coltracepb.ExportTraceServiceRequest{}
			}
			m := per[i].(*coltracepb.ExportTraceServiceRequest)
			m.ResourceSpans = append(m.ResourceSpans, rs)
		}
	default:
		http.NotFound(w, r)
		return
	}
	for i, msg := range per {
		b, err := proto.Marshal(msg)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		resp, err := http.Post("http://"+f.agents[i]+r.URL.Path, "application/x-protobuf", bytes.NewReader(b))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			http.Error(w, "agent: "+resp.Status, resp.StatusCode)
			return
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}
