package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
)

// persistenceConfig is a logs pipeline into collectiveattr (emit: on_job_end, in
// attribution mode mode) whose results and pass-through go to a file; with storageDir
// set, the processor keeps its jobs in a file_storage extension there, checkpointed
// every second.
func persistenceConfig(t *testing.T, dir, storageDir, mode string, healthPort, httpPort int, out string) string {
	t.Helper()
	cfg := collectorConfig{
		healthPort: healthPort,
		receivers:  otlpHTTPReceiver("otlp", httpPort),
		processors: fmt.Sprintf("collectiveattr:\n  mode: %s\n  emit: on_job_end\n  evaluation_interval: 500ms\n  job_idle_timeout: %s\n", mode, persistedIdleTimeout),
		exporters:  "file/logs:\n  path: " + out,
		pipelines:  pipeline("logs", "otlp", "collectiveattr", "file/logs"),
	}
	if storageDir != "" {
		cfg.extensions = []string{"file_storage:\n  directory: " + storageDir}
		cfg.processors += "  storage: file_storage\n  checkpoint_interval: 1s\n"
	}
	return cfg.write(t, dir, fmt.Sprintf("config-%d.yaml", httpPort))
}

// persistedIdleTimeout is the job_idle_timeout of the persistence runs: far
// longer than the wait before an interruption (on a loaded machine a SIGTERM
// that came 0.5 s before the job's end let the job end and be emitted first).
const persistedIdleTimeout = 6 * time.Second

// persistedJob is 40 s of a 4-rank job sampled at 10 Hz with a collective spike every
// 5 s, as stormlog records, from t0; part(i) is its i-th 10 s. With identity, each
// marker names its collective (a world all_reduce, numbered, lasting 250 ms), as
// evidence mode reads it.
type persistedJob struct {
	t0       int64
	identity bool
}

func (j persistedJob) part(i int64) plog.Logs {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	const step = int64(100 * time.Millisecond)
	for k := i * 100; k < (i+1)*100; k++ {
		ts := j.t0 + k*step
		for r := range int64(4) {
			gap := int64(100<<20) + (k*7919%13)<<20
			if k%50 == 25 {
				gap = 2 << 30
				body := stormlogBody("persisted", r, 4, ts, "collective", 0)
				if j.identity {
					body = strings.Replace(body, `"metadata":{}`, fmt.Sprintf(`"metadata":{"nccl.comm.id":"world","nccl.op":"all_reduce",`+
						`"nccl.seq":%d,"nccl.duration_ns":250000000,"nccl.comm.nranks":4}`, k/50), 1)
				}
				lrs.AppendEmpty().Body().SetStr(body)
			}
			lrs.AppendEmpty().Body().SetStr(stormlogBody("persisted", r, 4, ts, "sample", gap))
		}
	}
	return ld
}

// postLogsOK posts ld and requires the collector to accept it.
func postLogsOK(t *testing.T, port int, ld plog.Logs) {
	t.Helper()
	require.Equal(t, http.StatusOK, postLogs(t, port, ld))
}

// kill ends the collector with SIGKILL: no shutdown, no last checkpoint.
func (c *collector) kill() {
	c.t.Helper()
	require.NoError(c.t, c.cmd.Process.Kill())
	<-c.done
	c.exited = true
}

// attributionResults returns the result records in a file exporter's output as
// "rank interval_start classification confidence" lines, sorted.
func attributionResults(t *testing.T, path string) []string {
	t.Helper()
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return nil
	}
	var out []string
	for _, rl := range readLogs(t, path).ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if _, ok := lr.Attributes().Get("collective_attribution.classification"); !ok {
					continue
				}
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(lr.Body().Str()), &m))
				out = append(out, fmt.Sprintf("%v %v %v %v", m["rank"], m["interval_start_ns"], m["classification"], m["confidence"]))
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestKillAndRestartKeepsTheWindows: with emit: on_job_end, a collector killed with
// SIGKILL mid-job (after a checkpoint) and restarted on the same file storage emits,
// once the job ends, exactly the results of an uninterrupted run; so does one stopped
// with SIGTERM (a rolling update), whose shutdown keeps the job in the storage instead
// of finalising it. Without storage the kill loses the results of the first half of
// the job (issue 16 item 6).
func TestKillAndRestartKeepsTheWindows(t *testing.T) {
	collectorBinary(t)
	t.Run("reference", func(t *testing.T) { killAndRestart(t, "reference", false) })
	// Evidence mode's marker intervals, collectives table and emitted steps are in
	// the checkpoints too.
	t.Run("evidence", func(t *testing.T) { killAndRestart(t, "evidence", true) })
}

func killAndRestart(t *testing.T, mode string, identity bool) {
	dir := t.TempDir()
	job := persistedJob{t0: time.Now().Add(-2*time.Minute).UnixNano() / int64(time.Second) * int64(time.Second), identity: identity}

	// run sends the job's first half, interrupts the collector ("kill", "term" or
	// none), restarts it on the same storage, sends the second half and lets the job
	// end (job_idle_timeout); it returns the results written before and after.
	run := func(name string, storage bool, interrupt string) (before, after []string) {
		storageDir := ""
		if storage {
			storageDir = filepath.Join(dir, name+"-storage")
			require.NoError(t, os.MkdirAll(storageDir, 0o755))
		}
		ports := freePorts(t, 2)
		out1, out2 := filepath.Join(dir, name+"-1.json"), filepath.Join(dir, name+"-2.json")
		c := startCollector(t, persistenceConfig(t, dir, storageDir, mode, ports[0], ports[1], out1), nil, ports[0])
		postLogsOK(t, ports[1], job.part(0))
		postLogsOK(t, ports[1], job.part(1))
		out := out1
		if interrupt != "" {
			time.Sleep(2500 * time.Millisecond) // more than checkpoint_interval
			if interrupt == "kill" {
				c.kill()
			} else {
				c.stop()
			}
			ports = freePorts(t, 2)
			c = startCollector(t, persistenceConfig(t, dir, storageDir, mode, ports[0], ports[1], out2), nil, ports[0])
			out = out2
		}
		postLogsOK(t, ports[1], job.part(2))
		postLogsOK(t, ports[1], job.part(3))
		time.Sleep(persistedIdleTimeout + 2*time.Second) // job_idle_timeout and an evaluation: the job ends
		c.stop()
		if interrupt == "" {
			return nil, attributionResults(t, out1)
		}
		return attributionResults(t, out1), attributionResults(t, out)
	}

	_, want := run("uninterrupted", false, "")
	require.Len(t, want, 32, "8 spikes on 4 ranks")
	before, killed := run("killed", true, "kill")
	assert.Empty(t, before, "on_job_end emits nothing before the job ends")
	assert.Equal(t, want, killed, "results after kill -9 and restart on the same storage")
	before, stopped := run("stopped", true, "term")
	assert.Empty(t, before, "with storage, shutdown keeps the job instead of finalising it")
	assert.Equal(t, want, stopped, "results after SIGTERM and restart on the same storage")
	_, lost := run("no-storage", false, "kill")
	t.Logf("%s mode results: uninterrupted %d; with storage, killed and restarted %d (equal: %v), stopped and restarted %d (equal: %v); killed without storage %d",
		mode, len(want), len(killed), slices.Equal(want, killed), len(stopped), slices.Equal(want, stopped), len(lost))
	assert.Less(t, len(lost), len(want), "without storage the kill loses results")
}
