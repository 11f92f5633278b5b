package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// The cluster of the DCGM layout tests: three nodes, each with its own
// dcgm-exporter page, as real clusters run training jobs.
//
//   - node-a, Kubernetes with the GPU operator, a release dcgm-exporter
//     without NODE_NAME: its host label is `Hostname` holding the exporter
//     pod's name; scraped with honor_labels false and the exporter pod's
//     own pod/namespace target labels, so the workload labels arrive as
//     exported_pod/exported_namespace/exported_container; the chart's
//     relabelling adds k8s_node_name. Ranks 0–3, one pod per GPU.
//   - node-b, Kubernetes, dcgm-exporter main (lowercase `hostname`, the
//     node's name), honor_labels true. GPU 0 is MIG-partitioned: instance 1
//     is rank 4's, instance 2 rank 5's; the page lists both instance lines
//     and a whole-GPU line. GPU 1 is time-sliced between ranks 6 and 7.
//   - node-c, Slurm, dcgm-exporter with -n (no host label) and the legacy
//     lowercase `uuid`; the scrape config names the node with a `hostname`
//     target label. Ranks 8 and 9, one task per GPU (CUDA_VISIBLE_DEVICES).
//
// Every rank sees its GPU as index 0 and reports gpu.index 0 (and, in the
// first test, its GPU's UUID). Each page is scraped at its own interval and
// offset, and shows the truth as DCGM does: sampled every dcgmCollect,
// dcgmDelay late.
const (
	dcgmCollect = 100 * time.Millisecond
	dcgmDelay   = 200 * time.Millisecond
	layoutMiB   = int64(1) << 20
	spikeBytes  = 2048 * layoutMiB
	spikeLength = 1500 * time.Millisecond
)

type layoutGPU struct {
	node      string
	index     int
	uuid      string
	instances []int // MIG GPU instance ids; nil: a whole GPU
}

type layoutRank struct {
	rank     int
	node     string
	pod      string // "" outside Kubernetes
	gpu      int    // the GPU's index on its node (the rank itself reports 0)
	instance int    // MIG GPU instance, -1 for none
}

type layoutSpike struct {
	rank int
	at   time.Duration // after the job start
}

var (
	layoutGPUs = []layoutGPU{
		{"node-a", 0, "GPU-a0c1e2f3-0000-4a4a-8000-00000000a000", nil},
		{"node-a", 1, "GPU-a0c1e2f3-0001-4a4a-8000-00000000a001", nil},
		{"node-a", 2, "GPU-a0c1e2f3-0002-4a4a-8000-00000000a002", nil},
		{"node-a", 3, "GPU-a0c1e2f3-0003-4a4a-8000-00000000a003", nil},
		{"node-b", 0, "GPU-b0c1e2f3-0000-4b4b-8000-00000000b000", []int{1, 2}},
		{"node-b", 1, "GPU-b0c1e2f3-0001-4b4b-8000-00000000b001", nil},
		{"node-c", 0, "GPU-c0c1e2f3-0000-4c4c-8000-00000000c000", nil},
		{"node-c", 1, "GPU-c0c1e2f3-0001-4c4c-8000-00000000c001", nil},
	}
	layoutRanks = []layoutRank{
		{0, "node-a", "llm-worker-0", 0, -1}, {1, "node-a", "llm-worker-1", 1, -1},
		{2, "node-a", "llm-worker-2", 2, -1}, {3, "node-a", "llm-worker-3", 3, -1},
		{4, "node-b", "llm-worker-4", 0, 1}, {5, "node-b", "llm-worker-5", 0, 2},
		{6, "node-b", "llm-worker-6", 1, -1}, {7, "node-b", "llm-worker-7", 1, -1},
		{8, "node-c", "", 0, -1}, {9, "node-c", "", 1, -1},
	}
	// Spikes of hidden memory: on a GPU of its own (rank 2, 0, 5, 9), which
	// must land on that rank and no other, and on the time-sliced GPU (rank
	// 6), which no rank may receive.
	layoutSpikes = []layoutSpike{{2, 2 * time.Second}, {5, 3 * time.Second}, {0, 4 * time.Second}, {9, 5 * time.Second}, {6, 6 * time.Second}}
	// sharedRanks use one GPU together: their device memory is no one's.
	sharedRanks = map[int]bool{6: true, 7: true}
)

// allocatorReserved is rank r's constant allocator reservation, and
// baselineHidden its hidden memory between spikes: distinct per rank, so
// that a point joined to a wrong rank shows a wrong hidden value.
func allocatorReserved(r int) int64 { return int64(20+r) << 30 }
func baselineHidden(r int) int64    { return 1024*layoutMiB + int64(r)*16*layoutMiB }

// hiddenAt is rank r's true hidden memory at job time t.
func hiddenAt(r int, t time.Duration) int64 {
	h := baselineHidden(r)
	for _, s := range layoutSpikes {
		if s.rank == r && t >= s.at && t < s.at+spikeLength {
			h += spikeBytes
		}
	}
	return h
}

// usedAt is the framebuffer memory in use on a GPU (instance < 0: every
// instance) at job time t.
func usedAt(g layoutGPU, instance int, t time.Duration) int64 {
	var used int64
	for _, r := range layoutRanks {
		if r.node == g.node && r.gpu == g.index && (instance < 0 || r.instance == instance) {
			used += allocatorReserved(r.rank) + hiddenAt(r.rank, t)
		}
	}
	return used
}

// layoutClock is the job time of the pages and of the ranks: zero until
// the job starts, then the time since.
type layoutClock struct {
	mu    sync.Mutex
	start time.Time
}

func (c *layoutClock) begin() { c.mu.Lock(); c.start = time.Now(); c.mu.Unlock() }

func (c *layoutClock) at(w time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.start.IsZero() || w.Before(c.start) {
		return -time.Hour // before the job: no spike
	}
	return w.Sub(c.start)
}

// dcgmPage writes node's exporter page at wall time w: DCGM's last
// collection dcgmDelay ago, on the dcgmCollect grid.
func dcgmPage(w *bufio.Writer, node string, clock *layoutClock, now time.Time, opts layoutOptions) {
	collected := now.Add(-dcgmDelay).Truncate(dcgmCollect)
	t := clock.at(collected)
	type line struct {
		labels string
		used   int64
		total  int64
		resv   int64
	}
	var lines []line
	for _, g := range layoutGPUs {
		if g.node != node {
			continue
		}
		const totalMiB, reservedMiB = 81559, 512
		common := fmt.Sprintf(`gpu="%d",%s="%s",pci_bus_id="00000000:%02X:00.0",device="nvidia%d",modelName="NVIDIA H100 80GB HBM3"`,
			g.index, uuidLabel(node), g.uuid, 0x18+0x10*g.index, g.index)
		host := ""
		switch node {
		case "node-a":
			host = `,Hostname="nvidia-dcgm-exporter-x7k2p"` // NODE_NAME unset: the exporter pod's name
		case "node-b":
			host = `,hostname="node-b"`
		}
		workload := ""
		if node != "node-c" {
			for _, r := range layoutRanks {
				if r.node == node && r.gpu == g.index && r.instance < 0 {
					workload = fmt.Sprintf(`,container="trainer",namespace="ml",pod="%s"`, r.pod)
					break
				}
			}
		}
		lines = append(lines, line{common + host + `,DCGM_FI_DRIVER_VERSION="550.144.03"` + workload,
			usedAt(g, -1, t) + strayContexts(g, opts), totalMiB * layoutMiB, reservedMiB * layoutMiB})
		for _, gi := range g.instances {
			lines = append(lines, line{fmt.Sprintf(`%s,GPU_I_PROFILE="3g.40gb",GPU_I_ID="%d"%s,DCGM_FI_DRIVER_VERSION="550.144.03"`, common, gi, host),
				usedAt(g, gi, t), 40192 * layoutMiB, 0})
		}
	}
	for _, f := range []struct {
		name, help string
		value      func(line) int64
	}{
		{"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", func(l line) int64 { return l.total - l.used - l.resv }},
		{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", func(l line) int64 { return l.used }},
		{"DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB).", func(l line) int64 { return l.resv }},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n", f.name, f.help, f.name)
		for _, l := range lines {
			fmt.Fprintf(w, "%s{%s} %d\n", f.name, l.labels, f.value(l)/layoutMiB)
		}
	}
}

// uuidLabel is the exporter's UUID label: lowercase with the legacy
// --use-old-namespace (node-c).
func uuidLabel(node string) string {
	if node == "node-c" {
		return "uuid"
	}
	return "UUID"
}

// rankResource is what rank r's OTLP SDK puts on its resource: the pod's
// hostname as host.name (the SDK default), the node from the downward API
// in Kubernetes, GPU index 0 (all it sees), and its GPU's UUID when sent.
func rankResource(r layoutRank, withUUID bool) map[string]any {
	res := map[string]any{
		"service.name": "trainer", "training.job.id": "llm-pretrain", "training.rank": int64(r.rank),
		"training.world_size": int64(len(layoutRanks)), "gpu.index": int64(0),
	}
	if r.pod != "" {
		res["host.name"], res["k8s.pod.name"], res["k8s.node.name"] = r.pod, r.pod, r.node
	} else {
		res["host.name"] = r.node
	}
	if withUUID {
		for _, g := range layoutGPUs {
			if g.node == r.node && g.index == r.gpu {
				res["gpu.uuid"] = g.uuid
			}
		}
		if r.instance >= 0 {
			res["gpu.mig.instance_id"] = int64(r.instance)
		}
	}
	return res
}

// layoutConfig is the collector configuration: the processor with its
// default identity keys, each node's exporter scraped by its own job.
func layoutConfig(healthPort, httpPort, telemetryPort int, pages map[string]int, out string) string {
	return collectorConfig{
		healthPort:    healthPort,
		telemetryPort: telemetryPort,
		receivers: otlpHTTPReceiver("otlp", httpPort) + fmt.Sprintf(`prometheus:
  config:
    scrape_configs:
      - job_name: dcgm-node-a
        scrape_interval: 500ms
        scrape_timeout: 400ms
        honor_labels: false
        static_configs:
          - targets: ["127.0.0.1:%d"]
            labels: {pod: nvidia-dcgm-exporter-x7k2p, namespace: gpu-operator, k8s_node_name: node-a}
      - job_name: dcgm-node-b
        scrape_interval: 700ms
        scrape_timeout: 400ms
        honor_labels: true
        static_configs:
          - targets: ["127.0.0.1:%d"]
      - job_name: dcgm-node-c
        scrape_interval: 600ms
        scrape_timeout: 400ms
        static_configs:
          - targets: ["127.0.0.1:%d"]
            labels: {hostname: node-c}`, pages["node-a"], pages["node-b"], pages["node-c"]),
		processors: "collectiveattr:\n  evaluation_interval: 500ms\n  settle_delay: 2s",
		exporters:  "file/metrics:\n  path: " + filepath.Join(out, "metrics.json"),
		pipelines:  pipeline("metrics", "otlp, prometheus", "collectiveattr", "file/metrics"),
	}.yaml()
}

// layoutOptions vary the cluster of a layout run.
type layoutOptions struct {
	// withUUID: the ranks send their GPU's UUID.
	withUUID bool
	// contextsOnGPU0: every other rank of node-a also holds a CUDA context
	// on GPU 0 (contextBytes each), which DCGM counts in GPU 0's used.
	contextsOnGPU0 bool
	// processMemory: the ranks also send their own process's GPU memory
	// (process.gpu.memory.usage: reserved + hidden).
	processMemory bool
}

// contextBytes is one stray CUDA context (pytorch#135279).
const contextBytes = 500 * layoutMiB

// strayContexts is what the other ranks' contexts hold on GPU g.
func strayContexts(g layoutGPU, opts layoutOptions) int64 {
	if !opts.contextsOnGPU0 || g.node != "node-a" || g.index != 0 {
		return 0
	}
	n := int64(0)
	for _, r := range layoutRanks {
		if r.node == g.node && r.gpu != g.index {
			n++
		}
	}
	return n * contextBytes
}

// layoutRun runs the cluster for the job's length and returns the hidden
// memory points per rank (time, bytes) and the self-telemetry page.
func layoutRun(t *testing.T, opts layoutOptions) (map[int][][2]int64, time.Time, string) {
	ports := freePorts(t, 6)
	healthPort, httpPort, telemetryPort := ports[0], ports[1], ports[2]
	pages := map[string]int{"node-a": ports[3], "node-b": ports[4], "node-c": ports[5]}
	out := t.TempDir()
	config := filepath.Join(out, "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(layoutConfig(healthPort, httpPort, telemetryPort, pages, out)), 0o644))

	clock := &layoutClock{}
	var scrapedMu sync.Mutex
	scraped := map[string]bool{}
	for node, port := range pages {
		ln, err := net.Listen("tcp", "127.0.0.1:"+itoa(port))
		require.NoError(t, err)
		mux := http.NewServeMux()
		mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
			scrapedMu.Lock()
			scraped[node] = true
			scrapedMu.Unlock()
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			bw := bufio.NewWriter(w)
			dcgmPage(bw, node, clock, time.Now(), opts)
			_ = bw.Flush()
		})
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
	}
	c := startCollector(t, config, nil, healthPort)

	// The ranks report their allocator memory at 10 Hz from now on, so
	// that their claims exist before the job starts.
	stop := make(chan struct{})
	done := make(chan struct{})
	var refused int // requests the collector did not accept (read after done)
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				md := pmetric.NewMetrics()
				for _, r := range layoutRanks {
					res := rankResource(r, opts.withUUID)
					gauges(res, "gpu.memory.allocator.reserved",
						[][2]int64{{now.UnixNano(), allocatorReserved(r.rank)}}, nil).ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
					if opts.processMemory {
						own := allocatorReserved(r.rank) + hiddenAt(r.rank, clock.at(now))
						gauges(res, "process.gpu.memory.usage", [][2]int64{{now.UnixNano(), own}}, nil).ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
					}
				}
				body, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
				if err != nil || postOTLP(t, "http://127.0.0.1:"+itoa(httpPort)+"/v1/metrics", body, 5*time.Second) != http.StatusOK {
					refused++
				}
			}
		}
	}()
	waitFor(t, 30*time.Second, "every DCGM page scraped", func() bool {
		scrapedMu.Lock()
		defer scrapedMu.Unlock()
		return len(scraped) == len(pages)
	})
	clock.begin()
	start := time.Now()
	time.Sleep(layoutSpikes[len(layoutSpikes)-1].at + spikeLength + 2*time.Second)
	close(stop)
	<-done
	assert.Zero(t, refused, "allocator requests refused")
	time.Sleep(3 * time.Second) // settle_delay and a last evaluation round
	telemetry := scrape(t, "http://127.0.0.1:"+itoa(telemetryPort)+"/metrics")
	c.stop()

	hidden := map[int][][2]int64{}
	md := readMetrics(t, filepath.Join(out, "metrics.json"))
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() != metricHidden {
					continue
				}
				for _, dp := range m.Gauge().DataPoints().All() {
					r := int(rankOf(t, dp.Attributes(), rm.Resource()))
					hidden[r] = append(hidden[r], [2]int64{int64(dp.Timestamp()), pointValue(dp)})
				}
			}
		}
	}
	return hidden, start, telemetry
}

// checkNoWrongJoin checks every hidden memory point: its rank's baseline,
// or its baseline plus a spike of its own GPU while DCGM can show it.
// A point joined to a wrong rank has another rank's device memory minus
// this rank's reservation: off by whole GiB.
func checkNoWrongJoin(t *testing.T, hidden map[int][][2]int64, start time.Time) {
	const slack = 8 * layoutMiB
	for r, pts := range hidden {
		for _, p := range pts {
			at := time.Unix(0, p[0]).Sub(start)
			switch v := p[1]; {
			case absBytes(v-baselineHidden(r)) <= slack:
			case absBytes(v-baselineHidden(r)-spikeBytes) <= slack && ownSpikeVisible(r, at):
			default:
				t.Errorf("rank %d at %v: hidden %d MiB, neither its baseline %d MiB nor a spike of its own GPU",
					r, at, v/layoutMiB, baselineHidden(r)/layoutMiB)
			}
		}
	}
}

// ownSpikeVisible says whether a spike of rank r's is on its GPU's page at
// job time at (a scrape shows DCGM's collection up to dcgmDelay +
// dcgmCollect old).
func ownSpikeVisible(r int, at time.Duration) bool {
	for _, s := range layoutSpikes {
		if s.rank == r && at >= s.at+dcgmDelay-50*time.Millisecond && at <= s.at+spikeLength+dcgmDelay+dcgmCollect+50*time.Millisecond {
			return true
		}
	}
	return false
}

func absBytes(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// skippedCount reads items_skipped{signal="metrics",reason} from the
// self-telemetry page (0 when absent).
func skippedCount(t *testing.T, page, reason string) int64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^otelcol_processor_collectiveattr_items_skipped(?:_total)?\{([^}]*)\} ([0-9.e+]+)$`)
	var n int64
	for _, m := range re.FindAllStringSubmatch(page, -1) {
		if strings.Contains(m[1], `reason="`+reason+`"`) && strings.Contains(m[1], `signal="metrics"`) {
			v, err := strconv.ParseFloat(m[2], 64)
			require.NoError(t, err)
			n += int64(v)
		}
	}
	return n
}

// TestDCGMLayoutsJoinByUUID: ranks in pods and Slurm tasks, all reporting
// gpu.index 0 with their GPU's UUID, and three dcgm-exporter pages of the
// real label sets. With the default identity configuration every injected
// spike lands on the rank owning the GPU (or MIG instance) and on no
// other; the time-sliced GPU's memory goes to neither of its ranks
// (shared_device) and the MIG GPU's whole-GPU line to no instance's rank
// (mig_unmapped).
func TestDCGMLayoutsJoinByUUID(t *testing.T) {
	hidden, start, telemetry := layoutRun(t, layoutOptions{withUUID: true})
	for _, r := range layoutRanks {
		t.Logf("rank %d: %d hidden memory points", r.rank, len(hidden[r.rank]))
	}
	t.Logf("skipped: shared_device %d, mig_unmapped %d, unjoinable %d", skippedCount(t, telemetry, "shared_device"),
		skippedCount(t, telemetry, "mig_unmapped"), skippedCount(t, telemetry, "unjoinable"))
	checkNoWrongJoin(t, hidden, start)
	for _, r := range layoutRanks {
		if sharedRanks[r.rank] {
			assert.Empty(t, hidden[r.rank], "rank %d shares its GPU: no hidden memory from DCGM", r.rank)
			continue
		}
		assert.NotEmpty(t, hidden[r.rank], "rank %d's GPU joined to it", r.rank)
	}
	for _, s := range layoutSpikes {
		if sharedRanks[s.rank] {
			continue
		}
		seen := false
		for _, p := range hidden[s.rank] {
			if absBytes(p[1]-baselineHidden(s.rank)-spikeBytes) <= 8*layoutMiB {
				seen = true
			}
		}
		assert.True(t, seen, "the spike of rank %d at %v landed on it", s.rank, s.at)
	}
	assert.Positive(t, skippedCount(t, telemetry, "shared_device"), "the time-sliced GPU's points are counted as shared_device")
	assert.Positive(t, skippedCount(t, telemetry, "mig_unmapped"), "the MIG GPU's whole-GPU line is counted as mig_unmapped")
	assert.Zero(t, skippedCount(t, telemetry, "ambiguous_device"), "UUIDs leave no (host, index) to guess")
}

// TestDCGMLayoutsWithoutUUIDs: the same cluster with ranks that report
// only gpu.index 0. No point is joined to a wrong rank: GPU index 0 of
// each node is claimed by several ranks (ambiguous_device), the other
// GPUs by none (unjoinable).
func TestDCGMLayoutsWithoutUUIDs(t *testing.T) {
	hidden, start, telemetry := layoutRun(t, layoutOptions{})
	t.Logf("skipped: ambiguous_device %d, unjoinable %d", skippedCount(t, telemetry, "ambiguous_device"), skippedCount(t, telemetry, "unjoinable"))
	checkNoWrongJoin(t, hidden, start)
	for r, pts := range hidden {
		assert.Empty(t, pts, "rank %d: no (host, index) is one rank's, so nothing joins", r)
	}
	assert.Positive(t, skippedCount(t, telemetry, "ambiguous_device"))
	assert.Positive(t, skippedCount(t, telemetry, "unjoinable"))
}

// TestDCGMContextsOnGPU0: node-a's other ranks (1-3) each also hold a CUDA
// context on GPU 0 (pytorch#135279), so DCGM's GPU 0 line counts 1.5 GiB
// that is not rank 0's. With the ranks sending their own process's GPU
// memory, rank 0's hidden memory is its own at every point (its baseline,
// or its baseline plus its spike), the DCGM line joined to it by UUID
// forming none of its samples; without, rank 0's hidden memory holds the
// contexts.
func TestDCGMContextsOnGPU0(t *testing.T) {
	gpu0 := layoutGPUs[0]
	contexts := strayContexts(gpu0, layoutOptions{contextsOnGPU0: true})
	require.Equal(t, 3*contextBytes, contexts)

	t.Run("process memory", func(t *testing.T) {
		hidden, _, _ := layoutRun(t, layoutOptions{withUUID: true, contextsOnGPU0: true, processMemory: true})
		require.NotEmpty(t, hidden[0])
		for _, r := range layoutRanks {
			spiked := false
			for _, p := range hidden[r.rank] {
				switch p[1] {
				case baselineHidden(r.rank):
				case baselineHidden(r.rank) + spikeBytes:
					spiked = true
				default:
					t.Errorf("rank %d: hidden %d MiB, neither its baseline %d MiB nor its spike", r.rank, p[1]/layoutMiB, baselineHidden(r.rank)/layoutMiB)
				}
			}
			for _, s := range layoutSpikes {
				if s.rank == r.rank {
					assert.True(t, spiked, "rank %d's spike, exact from its process's figure", r.rank)
				}
			}
		}
	})

	t.Run("device-wide memory", func(t *testing.T) {
		hidden, start, _ := layoutRun(t, layoutOptions{withUUID: true, contextsOnGPU0: true})
		require.NotEmpty(t, hidden[0])
		for _, p := range hidden[0] {
			v := p[1] - contexts
			at := time.Unix(0, p[0]).Sub(start)
			assert.True(t, absBytes(v-baselineHidden(0)) <= 8*layoutMiB || absBytes(v-baselineHidden(0)-spikeBytes) <= 8*layoutMiB && ownSpikeVisible(0, at),
				"rank 0 at %v: hidden %d MiB holds the other ranks' %d MiB of contexts over its own", at, p[1]/layoutMiB, contexts/layoutMiB)
		}
		delete(hidden, 0)
		checkNoWrongJoin(t, hidden, start)
	})
}
