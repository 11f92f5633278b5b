package e2e

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/encoding/gzip" // the sink reads what the exporter compressed
)

// pipelineEnv turns TestPipelineCPU on; it is off in `make test` (minutes of real-time
// load, and a timing that means something only on a machine left alone).
// `make bench-pipeline` sets it.
const pipelineEnv = "COLLECTIVEATTR_PIPELINE_E2E"

// pipelineRun is TestPipelineCPU's settings, from the environment.
type pipelineRun struct {
	ranks      int           // COLLECTIVEATTR_PIPELINE_E2E_RANKS, default 1 024
	perRequest int           // COLLECTIVEATTR_PIPELINE_E2E_PER_REQUEST: ranks per OTLP request, default 64
	duration   time.Duration // COLLECTIVEATTR_PIPELINE_E2E_DURATION: measured load per run, default 20 s
	warmup     time.Duration // real-time load before the measurement, 5 s
	// backfill is the job time sent as fast as the collector takes it before the real-time
	// load (COLLECTIVEATTR_PIPELINE_E2E_BACKFILL, default 5m, the processor's window): the
	// measurement sees its steady state, a full window evaluated every interval.
	backfill    time.Duration
	rounds      int    // COLLECTIVEATTR_PIPELINE_E2E_ROUNDS: runs with and without, default 5
	compression string // COLLECTIVEATTR_PIPELINE_E2E_COMPRESSION: the exporter's, default gzip
	evaluation  string // COLLECTIVEATTR_PIPELINE_E2E_EVALUATION_INTERVAL: the processor's, default 10s
	// hiddenMetric is COLLECTIVEATTR_PIPELINE_E2E_HIDDEN_METRIC ("true", the default, or
	// "false", or both, "true,false"): whether the processor emits gpu.memory.hidden, a point
	// per sample, which the exporter then sends with the input; "false" tells that cost from
	// the processor's own. With both, each build with the processor runs both ways in every
	// round.
	hiddenMetric []string
	// gc is the collector's GOGC and GOMEMLIMIT (COLLECTIVEATTR_PIPELINE_E2E_GOGC and
	// _GOMEMLIMIT; unset: Go's defaults). Under the defaults a collection comes each time
	// the heap doubles, so the processor's buffers, by making the heap larger, make the
	// pipeline's collections rarer: GOGC=off with a GOMEMLIMIT takes that out of the ratio.
	gc      map[string]string
	signals []string // COLLECTIVEATTR_PIPELINE_E2E_SIGNALS: default "metrics,traces"
	// base is another build of the collector (COLLECTIVEATTR_PIPELINE_E2E_BASE, e.g. of
	// main), measured with the processor in the same rounds: before beside after.
	base string
	// floor is a build of e2e/floorcol/otelcol-floor (COLLECTIVEATTR_PIPELINE_E2E_FLOOR),
	// measured in the same rounds with the floor processor where collectiveattr would be
	// (testdata/e2e/pipeline-floor.yaml): what the least processor that buffers every sample
	// of the window adds, beside what collectiveattr adds.
	floor string
	// processors is the pipeline's processors (COLLECTIVEATTR_PIPELINE_E2E_PROCESSORS,
	// comma-separated, default "*"), "*" standing for the variant's processor (collectiveattr,
	// floor; nothing without): "memory_limiter,*,batch" is the pipeline deploy/manifests ship,
	// with their settings (pipeline.yaml).
	processors []string
	// profiles is a directory (COLLECTIVEATTR_PIPELINE_E2E_PROFILE): each run enables the
	// collector's pprof extension and saves a CPU profile of its measured window there, as
	// <signal>-<variant>-<round>.pprof, to tell what the processor's share is spent on.
	profiles string
}

func pipelineSettings(t *testing.T) pipelineRun {
	t.Helper()
	s := pipelineRun{ranks: 1024, perRequest: 64, duration: 20 * time.Second, warmup: 5 * time.Second,
		backfill: 5 * time.Minute, rounds: 5, compression: "gzip", signals: []string{"metrics", "traces"}}
	atoi := func(name string, into *int) {
		if v := os.Getenv(pipelineEnv + "_" + name); v != "" {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, pipelineEnv+"_"+name)
			require.Positive(t, n, pipelineEnv+"_"+name)
			*into = n
		}
	}
	atoi("RANKS", &s.ranks)
	atoi("PER_REQUEST", &s.perRequest)
	atoi("ROUNDS", &s.rounds)
	if v := os.Getenv(pipelineEnv + "_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, pipelineEnv+"_DURATION")
		s.duration = d
	}
	if v := os.Getenv(pipelineEnv + "_BACKFILL"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, pipelineEnv+"_BACKFILL")
		s.backfill = d
	}
	s.gc = map[string]string{}
	for _, name := range []string{"GOGC", "GOMEMLIMIT"} {
		if v := os.Getenv(pipelineEnv + "_" + name); v != "" {
			s.gc[name] = v
		}
	}
	s.evaluation = "10s"
	if v := os.Getenv(pipelineEnv + "_EVALUATION_INTERVAL"); v != "" {
		s.evaluation = v
	}
	s.hiddenMetric = []string{"true"}
	if v := os.Getenv(pipelineEnv + "_HIDDEN_METRIC"); v != "" {
		s.hiddenMetric = strings.Split(v, ",")
		for _, h := range s.hiddenMetric {
			_, err := strconv.ParseBool(h)
			require.NoError(t, err, pipelineEnv+"_HIDDEN_METRIC")
		}
	}
	s.processors = []string{"*"}
	if v := os.Getenv(pipelineEnv + "_PROCESSORS"); v != "" {
		s.processors = strings.Split(v, ",")
		require.Contains(t, s.processors, "*", pipelineEnv+"_PROCESSORS: * stands for the processor measured")
	}
	if v := os.Getenv(pipelineEnv + "_COMPRESSION"); v != "" {
		s.compression = v
	}
	if v := os.Getenv(pipelineEnv + "_SIGNALS"); v != "" {
		s.signals = strings.Split(v, ",")
	}
	s.base = pipelineBinary(t, pipelineEnv+"_BASE")
	s.floor = pipelineBinary(t, pipelineEnv+"_FLOOR")
	if v := os.Getenv(pipelineEnv + "_PROFILE"); v != "" {
		abs, err := filepath.Abs(v)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(abs, 0o755), pipelineEnv+"_PROFILE")
		s.profiles = abs
	}
	return s
}

// pipelineBinary is the absolute path of the collector build the environment variable
// names, which must exist, or "" when it is unset.
func pipelineBinary(t *testing.T, env string) string {
	v := os.Getenv(env)
	if v == "" {
		return ""
	}
	abs, err := filepath.Abs(v)
	require.NoError(t, err)
	_, err = os.Stat(abs)
	require.NoError(t, err, env)
	return abs
}

// pipelineVariant is one collector of a round: a binary, and the processor it runs where
// collectiveattr would.
type pipelineVariant struct {
	name string
	bin  string
	// processor is "collectiveattr", "floor" or "" (none).
	processor string
	// hiddenMetric is collectiveattr's gpu.memory.hidden setting.
	hiddenMetric string
	// configs are merged over pipeline.yaml.
	configs []string
}

// pipelineVariants are the collectors each round runs, "without" first.
func pipelineVariants(t *testing.T, run pipelineRun) []pipelineVariant {
	t.Helper()
	bin := collectorBinary(t)
	variants := []pipelineVariant{{name: "without", bin: bin, hiddenMetric: run.hiddenMetric[0]}}
	// with adds a build with collectiveattr, once per gpu.memory.hidden setting.
	with := func(label, bin string) {
		for _, h := range run.hiddenMetric {
			var tags []string
			if label != "" {
				tags = append(tags, label)
			}
			if len(run.hiddenMetric) > 1 && h == "false" {
				tags = append(tags, "hidden off")
			}
			name := "with"
			if len(tags) > 0 {
				name += " (" + strings.Join(tags, ", ") + ")"
			}
			variants = append(variants, pipelineVariant{name: name, bin: bin, processor: "collectiveattr", hiddenMetric: h})
		}
	}
	with("", bin)
	if run.base != "" {
		with("base", run.base)
	}
	if run.floor != "" {
		variants = append(variants, pipelineVariant{name: "floor", bin: run.floor, processor: "floor",
			hiddenMetric: run.hiddenMetric[0], configs: []string{filepath.Join(repoRoot(t), "testdata", "e2e", "pipeline-floor.yaml")}})
	}
	return variants
}

// pipelineProcessors is the service's processor list for a variant: run.processors with "*"
// the variant's processor, or left out without one.
func pipelineProcessors(run pipelineRun, v pipelineVariant) string {
	var list []string
	for _, p := range run.processors {
		if p == "*" {
			p = v.processor
		}
		if p != "" {
			list = append(list, p)
		}
	}
	return "[" + strings.Join(list, ", ") + "]"
}

// TestPipelineCPU measures what the processor adds to the CPU of a collector as an
// operator runs it: the built collector with an OTLP/gRPC receiver, [collectiveattr] or no
// processor, and an OTLP/gRPC exporter to a sink this test runs on loopback (accepting and
// discarding), all else the same (testdata/e2e/pipeline.yaml). Each run drives the same
// load in real time, one job second a second: a job of `ranks` ranks as in-process
// exporters report it (per rank at 10 Hz the device used, free and total and the allocator
// reserved and allocated gauges; or per rank and step two NCCL kernel spans and two
// compute spans), `perRequest` ranks to an OTLP request. After a warm-up, it reads the
// collector process's user + system CPU (/proc/<pid>/stat) over `duration` of load and
// until the sink has every item sent, and divides by the items sent. Runs with and without
// the processor alternate (each round starts with the next one); the figure is the ratio
// of the medians, with every round's ratio logged (docs/benchmarks.md). With
// COLLECTIVEATTR_PIPELINE_E2E_BASE naming another build (main's), it runs with the
// processor in the same rounds too: before beside after; with
// COLLECTIVEATTR_PIPELINE_E2E_FLOOR naming the otelcol-floor build (e2e/floorcol), it runs
// the floor processor in the same rounds: the least a processor that buffers every sample
// of the window adds. COLLECTIVEATTR_PIPELINE_E2E_HIDDEN_METRIC=true,false runs each build
// with the processor both with and without gpu.memory.hidden;
// COLLECTIVEATTR_PIPELINE_E2E_PROCESSORS=memory_limiter,*,batch puts every variant's
// processor (none without) where deploy/manifests ship collectiveattr. With
// COLLECTIVEATTR_PIPELINE_E2E_PROFILE naming a directory, every run also enables the
// collector's pprof extension and saves there a CPU profile of its measured window
// (`go tool pprof -diff_base` of a run without against one with the processor attributes
// the difference); the profiler's sampling then costs every variant alike.
func TestPipelineCPU(t *testing.T) {
	if os.Getenv(pipelineEnv) == "" {
		t.Skipf("%s is not set: the pipeline CPU measurement runs minutes of real-time load (make bench-pipeline)", pipelineEnv)
	}
	run := pipelineSettings(t)
	variants := pipelineVariants(t, run)
	sink := startSink(t)
	loadavg, _ := os.ReadFile("/proc/loadavg")
	t.Logf("load average at the start: %s", strings.TrimSpace(string(loadavg)))
	for _, name := range run.signals {
		load, ok := pipelineLoads[name]
		require.True(t, ok, "signal %q: metrics or traces", name)
		t.Run(name, func(t *testing.T) {
			// cpu[v] are variant v's figures, ratios[v] its rounds' ratios to "without".
			cpu := make([][]float64, len(variants))
			ratios := make([][]float64, len(variants))
			for round := range run.rounds {
				got := make([]float64, len(variants))
				for i := range variants {
					// Each round starts with the next variant: each runs first as often.
					v := (round + i) % len(variants)
					profile := ""
					if run.profiles != "" {
						profile = filepath.Join(run.profiles, fmt.Sprintf("%s-%s-%d.pprof", name,
							strings.NewReplacer(" ", "", ",", "", "(", "-", ")", "").Replace(variants[v].name), round+1))
					}
					got[v] = measurePipeline(t, run, sink, load, variants[v], profile)
					cpu[v] = append(cpu[v], got[v])
				}
				line := fmt.Sprintf("round %d:", round+1)
				for v := range variants {
					ratios[v] = append(ratios[v], got[v]/got[0])
					line += fmt.Sprintf(" %s %.0f (%.3f×)", variants[v].name, got[v], got[v]/got[0])
				}
				t.Log(line + " cpu-ns/" + load.unit)
			}
			loadavg, _ := os.ReadFile("/proc/loadavg")
			line := fmt.Sprintf("%s, %d ranks, %d a request, %s backfilled, %s measured a run, %d rounds, processors %s, exporter compression %s, evaluation interval %s, gpu.memory.hidden %s, GC %v; medians:",
				name, run.ranks, run.perRequest, run.backfill, run.duration, run.rounds, strings.Join(run.processors, ","), run.compression, run.evaluation,
				strings.Join(run.hiddenMetric, ","), run.gc)
			for v := range variants {
				line += fmt.Sprintf(" %s %.0f cpu-ns/%s (%.3f×, median of the rounds' ratios %.3f×);", variants[v].name,
					median(cpu[v]), load.unit, median(cpu[v])/median(cpu[0]), median(ratios[v]))
			}
			t.Logf("%s load average at the end: %s", line, strings.TrimSpace(string(loadavg)))
		})
	}
}

// measurePipeline runs the collector once, with or without the processor, drives the
// load and returns the collector's CPU nanoseconds per item sent while measured. With a
// profile path it saves the collector's CPU profile of the measured window there.
func measurePipeline(t *testing.T, run pipelineRun, sink *pipelineSink, load pipelineLoad, variant pipelineVariant, profile string) float64 {
	t.Helper()
	ports := freePorts(t, 4)
	grpcPort, healthPort, telemetryPort, pprofPort := ports[0], ports[1], ports[2], ports[3]
	env := map[string]string{
		"E2E_OTLP_GRPC_PORT": itoa(grpcPort), "E2E_HEALTH_PORT": itoa(healthPort), "E2E_TELEMETRY_PORT": itoa(telemetryPort),
		"E2E_SINK_PORT": itoa(sink.port), "E2E_PROCESSORS": pipelineProcessors(run, variant), "E2E_EXPORT_COMPRESSION": run.compression,
		"E2E_EVALUATION_INTERVAL": run.evaluation, "E2E_HIDDEN_METRIC": variant.hiddenMetric,
	}
	if profile != "" {
		env["E2E_EXTENSIONS"] = "[health_check, pprof]"
		env["E2E_PPROF_PORT"] = itoa(pprofPort)
	}
	maps.Copy(env, run.gc)
	c := startCollectorBinary(t, variant.bin, filepath.Join(repoRoot(t), "testdata", "e2e", "pipeline.yaml"), env, healthPort, variant.configs...)
	defer c.stop()
	cc, err := grpc.NewClient("127.0.0.1:"+itoa(grpcPort), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	require.NoError(t, err)
	defer cc.Close()
	send := load.client(cc)

	// The previous collector's last output (at its shutdown) is not this run's.
	load.reset(sink)
	sink.others.Store(0)
	pid := c.cmd.Process.Pid
	warmup := int(run.warmup / time.Second)
	seconds := warmup + int(run.duration/time.Second)
	received := load.received(sink)
	var sent, measured int64
	sendSecond := func(startNs int64) {
		for first := 0; first < run.ranks; first += run.perRequest {
			n, err := send(startNs, first, min(run.perRequest, run.ranks-first), run.ranks)
			require.NoError(t, err, "export to the collector")
			sent += int64(n)
			measured += int64(n)
		}
	}
	backfillStart := time.Now()
	for s := range int64(run.backfill / time.Second) {
		sendSecond((backfillStart.Add(-run.backfill).Unix() + s) * int64(time.Second))
	}
	if run.backfill > 0 {
		t.Logf("%s: %s of job time backfilled in %s", variant.name, run.backfill, time.Since(backfillStart).Round(time.Second))
	}
	var cpu0 time.Duration
	profiled := make(chan error, 1)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for s := range seconds {
		if s == warmup {
			_, cpu0, _ = readProc(pid)
			measured = 0
			if profile != "" {
				go func() { profiled <- saveCPUProfile(pprofPort, run.duration, profile) }()
			}
		}
		sendSecond(time.Now().Unix() * int64(time.Second))
		<-tick.C
	}
	waitFor(t, 60*time.Second, "the sink to receive every item sent", func() bool { return received() >= sent })
	rss, cpu1, ok := readProc(pid)
	require.True(t, ok)
	require.Equal(t, sent, received(), "items through the pipeline")
	if profile != "" {
		require.NoError(t, <-profiled, "CPU profile")
	}
	t.Logf("%s: %d items sent, %d measured, CPU %s, RSS %d MiB; the sink also received %d items of the processor's own",
		variant.name, sent, measured, cpu1-cpu0, rss>>20, sink.others.Load())
	return float64((cpu1 - cpu0).Nanoseconds()) / float64(measured)
}

// saveCPUProfile asks the collector's pprof extension for a CPU profile of the next d and
// writes it to path.
func saveCPUProfile(port int, d time.Duration, path string) error {
	client := http.Client{Timeout: d + 30*time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", port, int(d/time.Second)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// pipelineLoad is one signal's load: how to send a request of a job second, and how many
// of its items the sink has.
type pipelineLoad struct {
	unit string // "point", "span"
	// client returns a sender of the request of ranks [first, first+n) of a job of
	// world ranks for the second from startNs; it returns the items sent.
	client   func(cc *grpc.ClientConn) func(startNs int64, first, n, world int) (int, error)
	received func(*pipelineSink) func() int64
	reset    func(*pipelineSink)
}

var pipelineLoads = map[string]pipelineLoad{
	"metrics": {
		unit: "point",
		client: func(cc *grpc.ClientConn) func(int64, int, int, int) (int, error) {
			client := pmetricotlp.NewGRPCClient(cc)
			return func(startNs int64, first, n, world int) (int, error) {
				md := loadMetrics(startNs, first, n, world)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_, err := client.Export(ctx, pmetricotlp.NewExportRequestFromMetrics(md))
				return md.DataPointCount(), err
			}
		},
		received: func(s *pipelineSink) func() int64 { return s.points.Load },
		reset:    func(s *pipelineSink) { s.points.Store(0) },
	},
	"traces": {
		unit: "span",
		client: func(cc *grpc.ClientConn) func(int64, int, int, int) (int, error) {
			client := ptraceotlp.NewGRPCClient(cc)
			return func(startNs int64, first, n, world int) (int, error) {
				td := loadTraces(startNs, first, n, world)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
				return td.SpanCount(), err
			}
		},
		received: func(s *pipelineSink) func() int64 { return s.spans.Load },
		reset:    func(s *pipelineSink) { s.spans.Store(0) },
	},
}

// The load's job: in-process exporters of ranks on hosts of 8 GPUs, at 10 Hz.
const (
	loadHz          = 10
	loadGPUsPerHost = 8
	loadJob         = "pipeline-bench"
	loadDeviceTotal = 80 << 30
	loadReserved    = 20 << 30
)

// loadGauges are the gauges a rank reports each collection.
var loadGauges = []string{"gpu.memory.device.used", "gpu.memory.device.free", "gpu.memory.device.total",
	"gpu.memory.allocator.reserved", "gpu.memory.allocator.allocated"}

// loadMetrics is one second from startNs of ranks [first, first+n): per rank a resource
// with the torchrun identity and the loadGauges at loadHz.
func loadMetrics(startNs int64, first, n, world int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	for r := first; r < first+n; r++ {
		rm := md.ResourceMetrics().AppendEmpty()
		loadResource(rm.Resource().Attributes(), r, world)
		ms := rm.ScopeMetrics().AppendEmpty().Metrics()
		for _, name := range loadGauges {
			m := ms.AppendEmpty()
			m.SetName(name)
			m.SetUnit("By")
			dps := m.SetEmptyGauge().DataPoints()
			for c := range int64(loadHz) {
				ts := startNs + c*int64(time.Second)/loadHz
				// Hidden memory moving by a MiB a collection, a GiB spike every 7 s.
				gap := int64(1<<30) + (ts/int64(time.Second/loadHz))%7<<20
				if (ts/int64(time.Second))%7 == 0 && c == 5 {
					gap += 1 << 30
				}
				var v int64
				switch name {
				case "gpu.memory.device.used":
					v = loadReserved + gap
				case "gpu.memory.device.free":
					v = loadDeviceTotal - loadReserved - gap
				case "gpu.memory.device.total":
					v = loadDeviceTotal
				default:
					v = loadReserved
				}
				dp := dps.AppendEmpty()
				dp.SetTimestamp(pcommon.Timestamp(ts))
				dp.SetIntValue(v)
			}
		}
	}
	return md
}

func loadResource(ra pcommon.Map, rank, world int) {
	ra.PutStr("service.name", "trainer")
	ra.PutStr("training.job.id", loadJob)
	ra.PutInt("training.rank", int64(rank))
	ra.PutInt("training.local_rank", int64(rank%loadGPUsPerHost))
	ra.PutInt("training.world_size", int64(world))
	ra.PutStr("host.name", fmt.Sprintf("node-%d", rank/loadGPUsPerHost))
	ra.PutInt("gpu.index", int64(rank%loadGPUsPerHost))
}

// loadSpanNames are the spans of one step of a rank: compute and NCCL kernels.
var loadSpanNames = []string{"forward", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "backward", "ncclDevKernel_AllGather_RING_LL"}

// loadTraces is one second from startNs of ranks [first, first+n): per rank and step
// (loadHz a second) two NCCL kernel spans (with a kernel event) and two compute spans,
// with the attributes a CUDA/NCCL tracer sets.
func loadTraces(startNs int64, first, n, world int) ptrace.Traces {
	td := ptrace.NewTraces()
	sec := startNs / int64(time.Second)
	for r := first; r < first+n; r++ {
		rs := td.ResourceSpans().AppendEmpty()
		loadResource(rs.Resource().Attributes(), r, world)
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for step := range int64(loadHz) {
			t := startNs + step*int64(time.Second)/loadHz
			for i, name := range loadSpanNames {
				sp := spans.AppendEmpty()
				sp.SetName(name)
				sp.SetTraceID(pcommon.TraceID{byte(r >> 8), byte(r), byte(step), byte(i), byte(sec >> 24), byte(sec >> 16), byte(sec >> 8), byte(sec)})
				sp.SetSpanID(pcommon.SpanID{byte(r >> 8), byte(r), byte(step), byte(i), byte(sec >> 8), byte(sec), 1})
				sp.SetStartTimestamp(pcommon.Timestamp(t + int64(i)*int64(time.Millisecond)))
				sp.SetEndTimestamp(pcommon.Timestamp(t + int64(i+1)*int64(time.Millisecond)))
				sp.Attributes().PutStr("cuda.stream", "7")
				sp.Attributes().PutInt("thread.id", 11)
				if i%2 == 1 {
					sp.Attributes().PutStr("nccl.comm", "0x7f3c")
					sp.Attributes().PutInt("nccl.nranks", int64(world))
					ev := sp.Events().AppendEmpty()
					ev.SetName("kernel_launch")
					ev.SetTimestamp(pcommon.Timestamp(t))
				}
			}
		}
	}
	return td
}

// pipelineSink is the exporter's destination: an OTLP/gRPC server that counts the load's
// items it receives (not the processor's own gpu.memory.hidden points or result spans)
// and discards everything.
type pipelineSink struct {
	port          int
	points, spans atomic.Int64
	// others counts the other items: the processor's output.
	others atomic.Int64
}

func startSink(t *testing.T) *pipelineSink {
	t.Helper()
	s := &pipelineSink{port: freePort(t)}
	ln, err := listenLoopback(s.port)
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(256 << 20))
	pmetricotlp.RegisterGRPCServer(srv, &sinkMetrics{s: s})
	ptraceotlp.RegisterGRPCServer(srv, &sinkTraces{s: s})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return s
}

func listenLoopback(port int) (net.Listener, error) {
	return net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
}

type sinkMetrics struct {
	s *pipelineSink
	pmetricotlp.UnimplementedGRPCServer
}

func (k *sinkMetrics) Export(_ context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	n := 0
	for _, rm := range req.Metrics().ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if slices.Contains(loadGauges, m.Name()) {
					n += m.Gauge().DataPoints().Len()
				} else {
					switch m.Type() {
					case pmetric.MetricTypeGauge:
						k.s.others.Add(int64(m.Gauge().DataPoints().Len()))
					case pmetric.MetricTypeSum:
						k.s.others.Add(int64(m.Sum().DataPoints().Len()))
					default:
						k.s.others.Add(1)
					}
				}
			}
		}
	}
	k.s.points.Add(int64(n))
	return pmetricotlp.NewExportResponse(), nil
}

type sinkTraces struct {
	s *pipelineSink
	ptraceotlp.UnimplementedGRPCServer
}

func (k *sinkTraces) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	n := 0
	for _, rs := range req.Traces().ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				if slices.Contains(loadSpanNames, sp.Name()) {
					n++
				} else {
					k.s.others.Add(1)
				}
			}
		}
	}
	k.s.spans.Add(int64(n))
	return ptraceotlp.NewExportResponse(), nil
}
