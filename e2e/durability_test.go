package e2e

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
)

// storageFileName is the file file_storage keeps the collectiveattr
// processor's client in.
const storageFileName = "processor_collectiveattr_"

// checkpointedStorage runs a collector with storage in storageDir through
// a checkpoint of half a job, then kills it: storageDir holds a real
// storage file.
func checkpointedStorage(t *testing.T, dir, storageDir string) {
	t.Helper()
	job := persistedJob{t0: time.Now().Add(-2*time.Minute).UnixNano() / int64(time.Second) * int64(time.Second)}
	ports := freePorts(t, 2)
	c := startCollector(t, persistenceConfig(t, dir, storageDir, "reference", ports[0], ports[1], filepath.Join(dir, "first.json")), nil, ports[0])
	postLogsOK(t, ports[1], job.part(0))
	postLogsOK(t, ports[1], job.part(1))
	time.Sleep(2500 * time.Millisecond) // more than checkpoint_interval
	c.kill()
	info, err := os.Stat(filepath.Join(storageDir, storageFileName))
	require.NoError(t, err)
	require.Greater(t, info.Size(), int64(4*4096))
}

// mount runs mount(8) with args, skipping the test where it is not
// permitted (not root).
func mount(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Skipf("mount %v not permitted here (%v: %s); the fault needs a mount", args, err, out)
	}
	target := args[len(args)-1]
	t.Cleanup(func() { _ = exec.Command("umount", target).Run() })
}

// TestDamagedStorageStillStarts: each storage fault of issue 32 that kept
// the collector down (exit 1 or 2) at start leaves it running: it becomes
// healthy, its pipeline passes data through, and it logs one line naming
// the file and what to do. A damaged file is moved aside and a new one
// started; a read-only or full directory leaves the processor without
// persistence.
func TestDamagedStorageStillStarts(t *testing.T) {
	collectorBinary(t)
	const page = 4096
	tests := []struct {
		name string
		// fault damages the storage in storageDir (holding a real file).
		fault func(t *testing.T, storageDir string)
		// want is in the collector's log.
		want []string
		// aside: the damaged file is moved aside.
		aside bool
	}{
		{name: "random data pages", aside: true, want: []string{"is damaged"}, fault: func(t *testing.T, dir string) {
			// dd if=/dev/urandom of=FILE bs=4096 seek=2 count=(the rest) conv=notrunc
			path := filepath.Join(dir, storageFileName)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			_, err = rand.Read(b[2*page:])
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, b, 0o600))
		}},
		{name: "truncated to half", aside: true, want: []string{"is damaged"}, fault: func(t *testing.T, dir string) {
			path := filepath.Join(dir, storageFileName)
			info, err := os.Stat(path)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(path, info.Size()/2))
		}},
		{name: "zeroed meta pages", aside: true, want: []string{"is damaged"}, fault: func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, storageFileName), os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt(make([]byte, 2*page), 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}},
		{name: "empty file", aside: true, want: []string{"is damaged", "empty file (0 bytes)"}, fault: func(t *testing.T, dir string) {
			require.NoError(t, os.Truncate(filepath.Join(dir, storageFileName), 0))
		}},
		{name: "read-only directory", want: []string{"read-only file system", "running without persistence"}, fault: func(t *testing.T, dir string) {
			mount(t, "--bind", dir, dir)
			mount(t, "-o", "remount,ro,bind", dir)
		}},
		{name: "full directory", want: []string{"no space left on device", "running without persistence"}, fault: func(t *testing.T, dir string) {
			// A tmpfs of 64 KiB over the directory, filled.
			mount(t, "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir)
			// Fill it: bbolt cannot create its first pages.
			f, err := os.Create(filepath.Join(dir, "filler"))
			require.NoError(t, err)
			for {
				if _, err := f.Write(make([]byte, page)); err != nil {
					break
				}
			}
			require.NoError(t, f.Close())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			storageDir := filepath.Join(dir, "storage")
			require.NoError(t, os.MkdirAll(storageDir, 0o755))
			checkpointedStorage(t, dir, storageDir)
			tt.fault(t, storageDir)

			ports := freePorts(t, 2)
			out := filepath.Join(dir, "after.json")
			c := startCollector(t, persistenceConfig(t, dir, storageDir, "reference", ports[0], ports[1], out), nil, ports[0])
			job := persistedJob{t0: time.Now().Add(-time.Minute).UnixNano() / int64(time.Second) * int64(time.Second)}
			postLogsOK(t, ports[1], job.part(0))
			time.Sleep(1500 * time.Millisecond) // a checkpoint: a fresh file takes it
			log := c.log()
			c.stop()
			for _, w := range tt.want {
				assert.Contains(t, log, w)
			}
			assert.Contains(t, log, filepath.Join(storageDir, storageFileName), "the line names the file")
			if tt.aside {
				moved, err := filepath.Glob(filepath.Join(storageDir, storageFileName+".damaged-*"))
				require.NoError(t, err)
				assert.Len(t, moved, 1, "the damaged file is kept aside")
			}
			passed, _ := countLogRecords(t, out)
			assert.Equal(t, job.part(0).LogRecordCount(), passed, "the pipeline passes its data through")
		})
	}
}

// TestStorageDirectoryRemovedUnderTheCollector: the storage directory
// removed (and made again) under a running collector is noticed at the
// next checkpoint, logged and the file reopened, so that a kill -9 after it
// still restores the job.
func TestStorageDirectoryRemovedUnderTheCollector(t *testing.T) {
	collectorBinary(t)
	dir := t.TempDir()
	storageDir := filepath.Join(dir, "storage")
	require.NoError(t, os.MkdirAll(storageDir, 0o755))
	job := persistedJob{t0: time.Now().Add(-2*time.Minute).UnixNano() / int64(time.Second) * int64(time.Second)}
	ports := freePorts(t, 2)
	out := filepath.Join(dir, "out.json")
	c := startCollector(t, persistenceConfig(t, dir, storageDir, "reference", ports[0], ports[1], out), nil, ports[0])
	postLogsOK(t, ports[1], job.part(0))
	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, os.RemoveAll(storageDir))
	require.NoError(t, os.MkdirAll(storageDir, 0o755))
	postLogsOK(t, ports[1], job.part(1))
	waitFor(t, 10*time.Second, "the storage file to be written again", func() bool {
		_, err := os.Stat(filepath.Join(storageDir, storageFileName))
		return err == nil && strings.Contains(c.log(), "disappeared under the running collector")
	})
	time.Sleep(1500 * time.Millisecond)
	c.kill()

	ports = freePorts(t, 2)
	c = startCollector(t, persistenceConfig(t, dir, storageDir, "reference", ports[0], ports[1], out), nil, ports[0])
	defer c.stop()
	assert.Contains(t, c.log(), "restored jobs from storage", fmt.Sprintf("the job is restored from the reopened file:\n%s", c.logTail(20)))
}

// TestResultsSurviveAKillWhileTheDownstreamStalls: a job ends while its
// results' exporter (otlp_http to a peer that accepts and never answers,
// queue and retry off) holds them; the collector is killed with SIGKILL.
// Restarted on the same storage with a working exporter, it emits every
// result of the job (issue 32: 0 of 384 before).
func TestResultsSurviveAKillWhileTheDownstreamStalls(t *testing.T) {
	collectorBinary(t)
	dir := t.TempDir()
	job := persistedJob{t0: time.Now().Add(-2*time.Minute).UnixNano() / int64(time.Second) * int64(time.Second)}

	// The results of the job run through without storage.
	ports := freePorts(t, 2)
	wantOut := filepath.Join(dir, "want.json")
	c := startCollector(t, persistenceConfig(t, dir, "", "reference", ports[0], ports[1], wantOut), nil, ports[0])
	for i := range int64(4) {
		postLogsOK(t, ports[1], job.part(i))
	}
	time.Sleep(persistedIdleTimeout + 2*time.Second) // job_idle_timeout and an evaluation: the job ends
	c.stop()
	want := attributionResults(t, wantOut)
	require.Len(t, want, 32, "8 spikes on 4 ranks")

	storageDir := filepath.Join(dir, "storage")
	require.NoError(t, os.MkdirAll(storageDir, 0o755))
	dead := blackHole(t)
	ports = freePorts(t, 3)
	healthPort, httpPort, telemetryPort := ports[0], ports[1], ports[2]
	stalled := collectorConfig{
		healthPort:    healthPort,
		telemetryPort: telemetryPort,
		extensions:    []string{"file_storage:\n  directory: " + storageDir},
		receivers:     otlpHTTPReceiver("otlp", httpPort),
		processors: `collectiveattr:
  emit: on_job_end
  evaluation_interval: 500ms
  job_idle_timeout: 3s
  emit_timeout: 120s
  storage: file_storage
  checkpoint_interval: 1s`,
		exporters: fmt.Sprintf(`otlp_http/stalled:
  endpoint: http://%s
  timeout: 120s
  sending_queue:
    enabled: false
  retry_on_failure:
    enabled: false`, dead),
		pipelines: pipeline("logs", "otlp", "collectiveattr", "otlp_http/stalled"),
	}
	c = startCollector(t, stalled.write(t, dir, "stalled.yaml"), nil, healthPort)
	// The pass-through stalls too: each post gives up after a second, by
	// which time the processor has buffered it.
	for i := range int64(4) {
		body, err := (&plog.ProtoMarshaler{}).MarshalLogs(job.part(i))
		require.NoError(t, err)
		postOTLP(t, "http://127.0.0.1:"+itoa(httpPort)+"/v1/logs", body, time.Second)
	}
	telemetryURL := stalled.telemetryURL()
	waitFor(t, 30*time.Second, "the job's results handed to the stalled exporter", func() bool {
		return strings.Contains(scrape(t, telemetryURL), "otelcol_processor_collectiveattr_results_emitted")
	})
	time.Sleep(2500 * time.Millisecond) // checkpoints pass; the exporter still holds the results
	c.kill()

	ports = freePorts(t, 2)
	out := filepath.Join(dir, "after.json")
	c = startCollector(t, persistenceConfig(t, dir, storageDir, "reference", ports[0], ports[1], out), nil, ports[0])
	waitFor(t, 20*time.Second, "the results re-emitted", func() bool { return len(attributionResults(t, out)) >= len(want) })
	time.Sleep(2 * time.Second) // a checkpoint after the acceptance
	c.stop()
	assert.Equal(t, want, attributionResults(t, out), "every result of the job after kill -9 and restart")
	assert.Contains(t, c.log(), "restored jobs from storage")
}
