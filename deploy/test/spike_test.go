package deploytest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const gib = int64(1) << 30

// rankSender sends one rank's allocator and device gauges at 10 Hz, one
// OTLP request a second, until stopped; spikeNext makes the next request
// carry a 200 ms spike (two samples) in its middle.
type rankSender struct {
	endpoint string
	resource []keyValue
	mu       sync.Mutex
	spike    bool
	spiked   chan struct{}
}

const (
	spikeReserved = 10 * gib
	spikeBase     = 11 * gib // 1 GiB hidden
	spikeTop      = 15 * gib // 5 GiB hidden for 200 ms
	spikeTotal    = 80 * gib
)

func (s *rankSender) spikeNext() {
	s.mu.Lock()
	s.spike = true
	s.mu.Unlock()
}

func (s *rankSender) run(ctx context.Context, t *testing.T) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			s.mu.Lock()
			spike := s.spike
			s.spike = false
			s.mu.Unlock()
			used := otlpMetric{Name: "gpu.memory.device.used", Unit: "By"}
			reserved := otlpMetric{Name: "gpu.memory.allocator.reserved", Unit: "By"}
			total := otlpMetric{Name: "gpu.memory.device.total", Unit: "By"}
			for i := range 10 {
				ts := strconv.FormatInt(now.Add(time.Duration(i-9)*100*time.Millisecond).UnixNano(), 10)
				v := spikeBase
				// Samples 4 and 5 of 10: the spike is never a request's
				// newest sample.
				if spike && (i == 4 || i == 5) {
					v = spikeTop
				}
				used.Gauge.DataPoints = append(used.Gauge.DataPoints, gaugePoint{ts, strconv.FormatInt(v, 10)})
				reserved.Gauge.DataPoints = append(reserved.Gauge.DataPoints, gaugePoint{ts, strconv.FormatInt(spikeReserved, 10)})
				total.Gauge.DataPoints = append(total.Gauge.DataPoints, gaugePoint{ts, strconv.FormatInt(spikeTotal, 10)})
			}
			if err := tryPostOTLP(s.endpoint, "metrics", metricsRequest(s.resource, used, reserved, total)); err != nil {
				t.Errorf("send: %v", err)
				return
			}
			if spike {
				close(s.spiked)
			}
		}
	}
}

// TestSpikeSurvivesA15sScrape: the collector on the chart's node-local
// config and the chart's default processor values, scraped by a real
// Prometheus every 15 s, while a rank reports at 10 Hz. A 200 ms spike of
// 4 GiB, sent between two peak reports and followed by ordinary samples,
// is in Prometheus as gpu_memory_hidden_peak_bytes; the per-sample
// gpu_memory_hidden_bytes never shows it (the exporter keeps the last
// sample before each scrape).
func TestSpikeSurvivesA15sScrape(t *testing.T) {
	manifest := index(t, renderAndDecode(t, map[string]any{}))
	processor := writeFile(t, t.TempDir(), "processor.yaml", manifest.configMaps["collectiveattr-node-local"].Data["processor.yaml"])
	sink := startSpanSink(t)
	env := loopbackEnv(t)
	env["JAEGER_OTLP_ENDPOINT"] = sink.addr
	env["STORMLOG_GLOB"] = t.TempDir() + "/*.jsonl"
	env["STORMLOG_START_AT"] = "end"
	col := startCollector(t, "node-local collector", collectorBinary(t), env, []string{"node-local.yaml"}, processor)
	prom := startPrometheusEvery(t, 15*time.Second, addr(atoi(col.env["PROMETHEUS_PORT"])))

	const job = "spike-job"
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	senders := []*rankSender{}
	for rank := range int64(2) {
		s := &rankSender{endpoint: col.otlpHTTP(), spiked: make(chan struct{}),
			resource: []keyValue{strAttr("training.job.id", job), intAttr("training.rank", rank), intAttr("training.world_size", 2)}}
		senders = append(senders, s)
		wg.Go(func() { s.run(ctx, t) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })

	// The ranks' first peaks are reported at the first evaluation; the
	// spike goes in after that, so it waits for the next report,
	// hidden_peak_interval (30 s) later, through three evaluation rounds.
	eventually(t, 30*time.Second, 500*time.Millisecond, func() error {
		families, err := scrape(col.metricsURL())
		if err != nil {
			return err
		}
		return seriesWith(families, selectorNeeds{metric: "gpu_memory_hidden_peak_bytes", labels: []string{"training_job_id", "training_rank"}})
	})
	senders[0].spikeNext()
	select {
	case <-senders[0].spiked:
	case <-time.After(10 * time.Second):
		t.Fatal("the spike was not sent")
	}
	spikeSent := time.Now()

	peak := func(metric, rank string) (float64, error) {
		res, err := prom.query(fmt.Sprintf(`max_over_time(%s{training_job_id=%q, training_rank=%q}[5m])`, metric, job, rank))
		if err != nil {
			return 0, err
		}
		if len(res) != 1 {
			return 0, fmt.Errorf("%s rank %s: %d series", metric, rank, len(res))
		}
		return strconv.ParseFloat(res[0].Value[1].(string), 64)
	}
	eventually(t, 90*time.Second, time.Second, func() error {
		v, err := peak("gpu_memory_hidden_peak_bytes", "0")
		if err != nil {
			return err
		}
		if v != float64(spikeTop-spikeReserved) {
			return fmt.Errorf("max of gpu_memory_hidden_peak_bytes is %v, want the spike's %d", v, spikeTop-spikeReserved)
		}
		return nil
	})
	t.Logf("the spike reached Prometheus %v after it was sent", time.Since(spikeSent).Round(time.Second))

	// Prometheus scraped every 15 s, and more than once since the spike.
	res, err := prom.query(`count_over_time(up{job="collectiveattr"}[5m])`)
	require.NoError(t, err)
	require.Len(t, res, 1)
	scrapes, _ := strconv.Atoi(res[0].Value[1].(string))
	assert.GreaterOrEqual(t, scrapes, 2)
	assert.LessOrEqual(t, float64(scrapes), time.Since(spikeSent).Seconds()/15+4, "15 s scrapes, not more")

	hidden, err := peak("gpu_memory_hidden_bytes", "0")
	require.NoError(t, err)
	assert.Equal(t, float64(spikeBase-spikeReserved), hidden, "the per-sample gauge shows only the last sample before each scrape")
	other, err := peak("gpu_memory_hidden_peak_bytes", "1")
	require.NoError(t, err)
	assert.Equal(t, float64(spikeBase-spikeReserved), other, "rank 1 had no spike")

	// The headroom the alert watches: device used at its peak over capacity.
	res, err = prom.query(`max_over_time(gpu_memory_device_used_peak_bytes[5m]) / max_over_time(gpu_memory_device_limit_bytes[5m])`)
	require.NoError(t, err)
	ratios := map[string]string{}
	for _, s := range res {
		ratios[s.Metric["training_rank"]] = s.Value[1].(string)
	}
	assert.Equal(t, map[string]string{"0": "0.1875", "1": "0.1375"}, ratios)
}
