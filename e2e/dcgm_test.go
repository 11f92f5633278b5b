package e2e

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// TestDCGMJoinedToRanks runs a short real-time job whose device memory is reported only by
// a DCGM-exporter page (MiB, labels gpu/UUID/Hostname, no rank) that the prometheus
// receiver scrapes; allocator memory and spans come over OTLP with host.name and
// gpu.index. Hidden memory per rank can then only be computed if the processor joined
// each (host, GPU) to its rank (contract §3.3) and converted MiB to bytes.
func TestDCGMJoinedToRanks(t *testing.T) {
	ports := freePorts(t, 4)
	httpPort, healthPort, telemetryPort, dcgmPort := ports[0], ports[1], ports[2], ports[3]

	cfg := jobsim.DefaultConfig()
	cfg.Duration = 8 * time.Second
	cfg.LateRanks = 0
	s, err := jobsim.NewScenario(cfg)
	require.NoError(t, err)
	out := t.TempDir()
	c := startCollector(t, filepath.Join(repoRoot(t), "testdata", "e2e", "dcgm.yaml"), map[string]string{
		"E2E_OTLP_HTTP_PORT": itoa(httpPort), "E2E_HEALTH_PORT": itoa(healthPort),
		"E2E_TELEMETRY_PORT": itoa(telemetryPort), "E2E_DCGM_PORT": itoa(dcgmPort), "E2E_OUT_DIR": out,
	}, healthPort)

	// The prometheus receiver's first scrape comes seconds after start (its
	// discovery hands targets over every 5 s), which would leave only the
	// job's last few seconds with DCGM samples. So the page answers empty
	// until it has been scraped once, and the job starts then.
	var (
		epoch   time.Time
		epochMu sync.Mutex
		scraped = make(chan struct{})
		once    sync.Once
	)
	dcgm := s.DCGMHandler(func() time.Duration {
		epochMu.Lock()
		defer epochMu.Unlock()
		return time.Since(epoch)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:"+itoa(dcgmPort))
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		epochMu.Lock()
		started := !epoch.IsZero()
		epochMu.Unlock()
		if !started {
			once.Do(func() { close(scraped) })
			return
		}
		dcgm.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	select {
	case <-scraped:
	case <-time.After(30 * time.Second):
		t.Fatal("the prometheus receiver never scraped the DCGM page")
	}
	epochMu.Lock()
	epoch = time.Now()
	epochMu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = s.Run(ctx, jobsim.Options{Epoch: epoch, Realtime: true, Device: jobsim.DeviceFromDCGM,
		OTLP: jobsim.NewOTLPSender("127.0.0.1:" + itoa(httpPort))})
	require.NoError(t, err)
	c.stop()

	md := readMetrics(t, filepath.Join(out, "metrics.json"))
	dcgmHosts := map[string]bool{}
	hidden := map[int64][]int64{} // rank → hidden bytes after the allocator warm-up
	warm := epoch.Add(cfg.StepPeriod)
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				switch m.Name() {
				case jobsim.DCGMFBUsed:
					for _, dp := range m.Gauge().DataPoints().All() {
						if h, ok := dp.Attributes().Get("Hostname"); ok {
							dcgmHosts[h.Str()] = true
						}
					}
				case jobsim.MetricDeviceUsed:
					t.Errorf("the simulator sent %s over OTLP although DCGM reports device memory", m.Name())
				case metricHidden:
					require.Equal(t, pmetric.MetricTypeGauge, m.Type())
					for _, dp := range m.Gauge().DataPoints().All() {
						if dp.Timestamp().AsTime().After(warm) {
							r := rankOf(t, dp.Attributes(), rm.Resource())
							hidden[r] = append(hidden[r], pointValue(dp))
						}
					}
				}
			}
		}
	}
	assert.Len(t, dcgmHosts, 2, "the DCGM page was scraped and passed through with its Hostname label")

	// Every rank's typical hidden memory is its own quiet-time value: a point joined to
	// the wrong (host, GPU) or left in MiB would be far off.
	quiet := 3 * time.Second // the forward pass of step 1: no injected spike
	for r := range cfg.Ranks {
		got := hidden[int64(r)]
		if !assert.NotEmpty(t, got, "%s for rank %d (DCGM joined to it)", metricHidden, r) {
			continue
		}
		slices.Sort(got)
		want := s.SampleAt(r, quiet).Hidden()
		assert.InDelta(t, want, got[len(got)/2], float64(4<<20), "median hidden memory of rank %d", r)
	}
}
