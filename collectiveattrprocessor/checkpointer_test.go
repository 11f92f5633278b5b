package collectiveattrprocessor

import (
	"context"
	"errors"
	"maps"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
)

// memStorage is a storage extension keeping its values in a map that
// outlives its clients, as a file outlives a process.
type memStorage struct {
	mu      sync.Mutex
	values  map[string][]byte
	failSet error
	// failOpen, when set, is GetClient's error.
	failOpen error
}

func (m *memStorage) Start(context.Context, component.Host) error { return nil }
func (m *memStorage) Shutdown(context.Context) error              { return nil }
func (m *memStorage) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	if m.failOpen != nil {
		return nil, m.failOpen
	}
	return memClient{m}, nil
}

type memClient struct{ m *memStorage }

func (c memClient) Get(_ context.Context, key string) ([]byte, error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	return c.m.values[key], nil
}

func (c memClient) Set(ctx context.Context, key string, value []byte) error {
	return c.Batch(ctx, storage.SetOperation(key, value))
}

func (c memClient) Delete(ctx context.Context, key string) error {
	return c.Batch(ctx, storage.DeleteOperation(key))
}

func (c memClient) Batch(_ context.Context, ops ...*storage.Operation) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	for _, op := range ops {
		switch op.Type {
		case storage.Get:
			op.Value = c.m.values[op.Key]
		case storage.Set:
			if c.m.failSet != nil {
				return c.m.failSet
			}
			c.m.values[op.Key] = append([]byte(nil), op.Value...)
		case storage.Delete:
			delete(c.m.values, op.Key)
		}
	}
	return nil
}

func (c memClient) Close(context.Context) error { return nil }

// notStorage is an extension that is not a storage extension.
type notStorage struct{}

func (notStorage) Start(context.Context, component.Host) error { return nil }
func (notStorage) Shutdown(context.Context) error              { return nil }

type storageHost struct {
	exts map[component.ID]component.Component
}

func (h storageHost) GetExtensions() map[component.ID]component.Component { return h.exts }

var storageID = component.MustNewID("file_storage")

func storageConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Emit = EmitOnJobEnd
	cfg.Storage = &storageID
	cfg.JobIdleTimeout = time.Second
	return cfg
}

// startWithStorage starts a logs processor on st; the test drives its
// checkpoints.
func startWithStorage(t testing.TB, cfg *Config, st *memStorage, set processor.Settings) (*testLogs, *consumertest.LogsSink) {
	t.Helper()
	sink := new(consumertest.LogsSink)
	p := newTestLogsProcessor(t, cfg, set, sink)
	require.NoError(t, p.Start(context.Background(), storageHost{exts: map[component.ID]component.Component{storageID: st}}))
	return p, sink
}

func (p *testLogs) checkpointNow() {
	p.core.evalMu.Lock()
	defer p.core.evalMu.Unlock()
	p.core.checkpoint(context.Background())
}

// crash stops the core's goroutines the way kill -9 does: no final
// evaluation, no last checkpoint.
func (p *testLogs) crash() {
	c := p.core
	c.cancel()
	<-c.done
	c.emitter.stop()
	c.tel.tb.Shutdown()
}

func resultKeys(t *testing.T, sink *consumertest.LogsSink) []string {
	var keys []string
	for _, m := range resultLogs(t, sink) {
		keys = append(keys, intervalKey(m)+"/"+m["classification"].(string))
	}
	sort.Strings(keys)
	return keys
}

// TestRestartResumesTheJob: a processor that crashes mid-job after a
// checkpoint, restarted on the same storage, emits at the job's end what an
// uninterrupted one emits; the finalised job leaves the storage.
func TestRestartResumesTheJob(t *testing.T) {
	const s = int64(time.Second)
	base := (time.Now().UnixNano()/s - 120) * s
	job := jobTraffic{job: "resumed", ranks: 4, stepNs: s / 10, spikes: []int64{base + 5*s, base + 15*s, base + 25*s, base + 35*s}}
	first, rest := job.lines(base, base+20*s), job.lines(base+20*s, base+40*s)

	whole := new(consumertest.LogsSink)
	p := newTestLogsProcessor(t, createDefaultConfigOnJobEnd(), nopSettings(), whole)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(first)))
	require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(rest)))
	require.NoError(t, p.Shutdown(context.Background()))
	want := resultKeys(t, whole)
	require.Len(t, want, 16, "4 spikes on 4 ranks")

	st := &memStorage{values: map[string][]byte{}}
	before, beforeSink := startWithStorage(t, storageConfig(), st, nopSettings())
	require.NoError(t, before.ConsumeLogs(context.Background(), stormlogLogs(first)))
	before.checkpointNow()
	before.crash()
	assert.Empty(t, resultKeys(t, beforeSink))
	require.Contains(t, st.values, jobKey("resumed"))

	after, afterSink := startWithStorage(t, storageConfig(), st, nopSettings())
	assert.Equal(t, 1, jobsTracked(after.core), "the job is restored")
	require.NoError(t, after.ConsumeLogs(context.Background(), stormlogLogs(rest)))
	// The job ends: idle for job_idle_timeout, it is finalised.
	time.Sleep(after.core.cfg.JobIdleTimeout + 100*time.Millisecond)
	require.NoError(t, after.core.evaluate(context.Background(), false))
	require.NoError(t, after.Shutdown(context.Background()))
	assert.Equal(t, want, resultKeys(t, afterSink))
	assert.Equal(t, []string{indexKey}, sortedKeys(st.values), "the finalised job left the storage")
	idx, err := readIndex(context.Background(), memClient{st})
	require.NoError(t, err)
	assert.Empty(t, idx)
}

// TestShutdownKeepsJobsInStorage: with storage, Shutdown does not finalise
// the jobs (a rolling update resumes them): it checkpoints them, and the
// next start restores them.
func TestShutdownKeepsJobsInStorage(t *testing.T) {
	const s = int64(time.Second)
	base := (time.Now().UnixNano()/s - 120) * s
	job := jobTraffic{job: "kept", ranks: 2, stepNs: s / 10, spikes: []int64{base + 2*s}}
	st := &memStorage{values: map[string][]byte{}}
	p, sink := startWithStorage(t, storageConfig(), st, nopSettings())
	require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(job.lines(base, base+4*s))))
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Empty(t, resultKeys(t, sink), "nothing is finalised at shutdown")
	require.Contains(t, st.values, jobKey("kept"))

	q, qSink := startWithStorage(t, storageConfig(), st, nopSettings())
	assert.Equal(t, 1, jobsTracked(q.core))
	time.Sleep(q.core.cfg.JobIdleTimeout + 100*time.Millisecond)
	require.NoError(t, q.core.evaluate(context.Background(), false))
	require.NoError(t, q.Shutdown(context.Background()))
	assert.Len(t, resultKeys(t, qSink), 2, "the restored job is finalised once idle")
	assert.NotContains(t, st.values, jobKey("kept"))
}

func createDefaultConfigOnJobEnd() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Emit = EmitOnJobEnd
	return cfg
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestUnusableCheckpointsAreSkipped: a corrupt checkpoint, one listed but
// missing, and a failing write are logged, counted and skipped; the
// processor starts and keeps the jobs it could restore.
func TestUnusableCheckpointsAreSkipped(t *testing.T) {
	const s = int64(time.Second)
	base := (time.Now().UnixNano()/s - 120) * s
	good := jobTraffic{job: "good", ranks: 2, stepNs: s / 10}
	st := &memStorage{values: map[string][]byte{}}
	p, _ := startWithStorage(t, storageConfig(), st, nopSettings())
	require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(good.lines(base, base+5*s))))
	p.checkpointNow()
	p.crash()

	st.values[jobKey("corrupt")] = seal([]byte("CAJ\x00\x01garbage"), 0)
	st.values[indexKey] = seal([]byte(indexHeader+jobKey("corrupt")+"\n"+jobKey("good")+"\n"+jobKey("missing")), 0)

	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	q, _ := startWithStorage(t, storageConfig(), st, metadatatest.NewSettings(tel))
	assert.Equal(t, 1, jobsTracked(q.core))
	assert.NotContains(t, st.values, jobKey("corrupt"), "an unusable checkpoint is dropped")

	// A write that fails is counted, and retried at the next checkpoint.
	require.NoError(t, q.ConsumeLogs(context.Background(), stormlogLogs(good.lines(base+5*s, base+6*s))))
	st.failSet = errors.New("disk full")
	q.checkpointNow()
	st.failSet = nil
	assert.Equal(t, 1, len(q.core.store.Unsaved()), "the job is written again at the next checkpoint")
	q.checkpointNow()
	assert.Empty(t, q.core.store.Unsaved())
	require.NoError(t, q.Shutdown(context.Background()))

	m, err := tel.GetMetric("otelcol_processor_collectiveattr_checkpoint_failures")
	require.NoError(t, err)
	got := map[string]int64{}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		op, _ := dp.Attributes.Value(attribute.Key("operation"))
		got[op.AsString()] += dp.Value
	}
	assert.Equal(t, map[string]int64{"restore": 2, "write": 1}, got)
}

// TestStartFailsWithoutTheStorageExtension: storage: naming an extension
// that is not there, or is not a storage extension, fails Start.
func TestStartFailsWithoutTheStorageExtension(t *testing.T) {
	for name, exts := range map[string]map[component.ID]component.Component{
		"missing":       {},
		"not a storage": {storageID: notStorage{}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := storageConfig()
			p := newTestLogsProcessor(t, cfg, nopSettings(), new(consumertest.LogsSink))
			err := p.Start(context.Background(), storageHost{exts: exts})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "file_storage")
			require.NoError(t, p.Shutdown(context.Background()))
		})
	}
}
