package collectiveattrprocessor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/store"
)

// counted returns a counter's values by the value of attribute key.
func counted(t *testing.T, tel *componenttest.Telemetry, name, key string) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	m, err := tel.GetMetric(name)
	if err != nil {
		return got
	}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		v, _ := dp.Attributes.Value(attribute.Key(key))
		got[v.AsString()] += dp.Value
	}
	return got
}

func newTelemetry(t *testing.T) *componenttest.Telemetry {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	return tel
}

// checkpointedJob runs a processor on st through a checkpoint of a 2-rank
// job with spikes, and crashes it; it returns the job's traffic.
func checkpointedJob(t testing.TB, st *memStorage, id string) []string {
	const s = int64(time.Second)
	base := (time.Now().UnixNano()/s - 120) * s
	job := jobTraffic{job: id, ranks: 2, stepNs: s / 10, spikes: []int64{base + 2*s, base + 6*s}}
	lines := job.lines(base, base+8*s)
	p, _ := startWithStorage(t, storageConfig(), st, nopSettings())
	require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(lines)))
	p.checkpointNow()
	p.crash()
	return lines
}

// TestEveryDamagedValueIsRefused: every single-bit flip and every
// truncation of a stored checkpoint is refused by the envelope; none is
// restored as different data (issue 32: 4 of 32 flips were).
func TestEveryDamagedValueIsRefused(t *testing.T) {
	st := &memStorage{values: map[string][]byte{}}
	checkpointedJob(t, st, "sealed")
	value := st.values[jobKey("sealed")]
	require.NotEmpty(t, value)
	_, _, _, err := openEnvelope(value, legacyJobPrefix)
	require.NoError(t, err)
	for i := range len(value) * 8 {
		damaged := bytes.Clone(value)
		damaged[i/8] ^= 1 << (i % 8)
		if _, _, _, err := openEnvelope(damaged, legacyJobPrefix); err == nil {
			t.Fatalf("bit %d flipped: restored", i)
		}
	}
	for n := range len(value) {
		if _, _, _, err := openEnvelope(value[:n], legacyJobPrefix); err == nil {
			t.Fatalf("truncated to %d of %d bytes: restored", n, len(value))
		}
	}
}

// TestAFlippedBitIsCountedNotRestored: through a restart, a checkpoint with
// one bit flipped in a rank's world size is refused, logged and counted
// (checkpoint_failures, restore), and the job is not restored.
func TestAFlippedBitIsCountedNotRestored(t *testing.T) {
	st := &memStorage{values: map[string][]byte{}}
	checkpointedJob(t, st, "flipped")
	value := st.values[jobKey("flipped")]
	// The first rank's meta section: its rank (0), its world size (2,
	// varint 4), its host's length and its host.
	at := bytes.Index(value, []byte("node-0")) - 2
	require.Equal(t, byte(4), value[at], "world size 2 of rank 0")
	value[at] ^= 1 << 5

	tel := newTelemetry(t)
	p, _ := startWithStorage(t, storageConfig(), st, metadatatest.NewSettings(tel))
	assert.Equal(t, 0, jobsTracked(p.core), "a damaged checkpoint is not restored")
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, map[string]int64{"restore": 1}, counted(t, tel, "otelcol_processor_collectiveattr_checkpoint_failures", "operation"))
}

// TestCheckpointsWrittenBeforeEnvelopesRestore: the storage of a build
// before the envelope (testdata: its index and a job's bare checkpoint)
// restores, emits what the job's own traffic gives, and is rewritten
// sealed. An upgrade keeps every job.
func TestCheckpointsWrittenBeforeEnvelopesRestore(t *testing.T) {
	index, err := os.ReadFile("testdata/storage-before-envelope/index")
	require.NoError(t, err)
	job, err := os.ReadFile("testdata/storage-before-envelope/job-legacy")
	require.NoError(t, err)
	// The traffic the testdata was written from (2 ranks, 8 s from
	// 1700000000 s, spikes at 2 s and 6 s), checkpointed by the build
	// before envelopes, uninterrupted here.
	const s = int64(time.Second)
	base := int64(1_700_000_000) * s
	traffic := jobTraffic{job: "legacy", ranks: 2, stepNs: s / 10, spikes: []int64{base + 2*s, base + 6*s}}
	whole := new(consumertest.LogsSink)
	w := newTestLogsProcessor(t, createDefaultConfigOnJobEnd(), nopSettings(), whole)
	require.NoError(t, w.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, w.ConsumeLogs(context.Background(), stormlogLogs(traffic.lines(base, base+8*s))))
	require.NoError(t, w.Shutdown(context.Background()))
	want := resultKeys(t, whole)
	require.Len(t, want, 4)

	st := &memStorage{values: map[string][]byte{indexKey: index, jobKey("legacy"): job}}
	p, sink := startWithStorage(t, storageConfig(), st, nopSettings())
	require.Equal(t, 1, jobsTracked(p.core))
	p.checkpointNow()
	for key, value := range st.values {
		assert.True(t, bytes.HasPrefix(value, []byte(envelopeMagic)), "%s rewritten sealed", key)
	}
	time.Sleep(p.core.cfg.JobIdleTimeout + 100*time.Millisecond)
	require.NoError(t, p.core.evaluate(context.Background(), false))
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, want, resultKeys(t, sink))
}

// TestUnavailableStorageDegradesPersistenceOnly: a storage extension that
// gives no client (a read-only or full directory) does not fail Start: the
// processor runs without persistence, logs one line saying what to do,
// counts the fault, and connects at a later checkpoint, which writes the
// jobs it holds.
func TestUnavailableStorageDegradesPersistenceOnly(t *testing.T) {
	st := &memStorage{values: map[string][]byte{}, failOpen: errors.New("open /var/lib/otelcol/processor_collectiveattr_: read-only file system")}
	tel := newTelemetry(t)
	set := metadatatest.NewSettings(tel)
	logs, observed := observer.New(zap.InfoLevel)
	set.Logger = zap.New(logs)
	p, sink := startWithStorage(t, storageConfig(), st, set)

	const s = int64(time.Second)
	base := (time.Now().UnixNano()/s - 120) * s
	job := jobTraffic{job: "unsaved", ranks: 2, stepNs: s / 10}
	ld := stormlogLogs(job.lines(base, base+2*s))
	require.NoError(t, p.ConsumeLogs(context.Background(), ld))
	assert.Equal(t, ld.LogRecordCount(), sink.LogRecordCount(), "the pipeline passes its data through")
	assert.Equal(t, 1, jobsTracked(p.core))
	p.checkpointNow() // still failing: counted, not logged again
	require.Equal(t, 1, observed.FilterMessageSnippet("running without persistence").Len())
	line := observed.FilterMessageSnippet("running without persistence").All()[0].Message
	assert.Contains(t, line, "read-only file system")
	assert.Contains(t, line, "writable")

	st.mu.Lock()
	st.failOpen = nil
	st.mu.Unlock()
	p.checkpointNow()
	assert.Contains(t, st.values, jobKey("unsaved"), "the job is written once the storage opens")
	assert.Equal(t, 1, observed.FilterMessageSnippet("storage available again").Len())
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, map[string]int64{"open_failed": 2}, counted(t, tel, "otelcol_processor_collectiveattr_storage_faults", "fault"))
}

// stallingLogs is a downstream that accepts a batch of results only once
// released; until then its calls wait for their context. Other batches
// (the pass-through) it accepts at once.
type stallingLogs struct {
	release chan struct{}
	mu      sync.Mutex
	got     []plog.Logs
}

func (s *stallingLogs) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (s *stallingLogs) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if !holdsResults(ld) {
		return nil
	}
	select {
	case <-s.release:
		s.mu.Lock()
		s.got = append(s.got, ld)
		s.mu.Unlock()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func holdsResults(ld plog.Logs) bool {
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if _, ok := lr.Attributes().Get("collective_attribution.classification"); ok {
					return true
				}
			}
		}
	}
	return false
}

func startLogsOn(t *testing.T, cfg *Config, st *memStorage, next consumer.Logs) *testLogs {
	t.Helper()
	f := newFactory(defaultClock())
	p, err := f.processorFactory().CreateLogs(context.Background(), nopSettings(), cfg, next)
	require.NoError(t, err)
	tl := &testLogs{Logs: p, core: f.cores[cfg]}
	require.NoError(t, tl.Start(context.Background(), storageHost{exts: map[component.ID]component.Component{storageID: st}}))
	return tl
}

var _ processor.Logs = (*testLogs)(nil)

// TestFinishedJobIsDeliveredAtLeastOnce: a finalised job's checkpoint stays
// in the storage, marked final, while the downstream holds its results; a
// crash then, and a restart, emits them again. Once a downstream accepts
// them, the checkpoint leaves the storage.
func TestFinishedJobIsDeliveredAtLeastOnce(t *testing.T) {
	const s = int64(time.Second)
	base := (time.Now().UnixNano()/s - 120) * s
	traffic := jobTraffic{job: "delivered", ranks: 2, stepNs: s / 10, spikes: []int64{base + 2*s, base + 6*s}}
	lines := traffic.lines(base, base+8*s)
	whole := new(consumertest.LogsSink)
	w := newTestLogsProcessor(t, createDefaultConfigOnJobEnd(), nopSettings(), whole)
	require.NoError(t, w.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, w.ConsumeLogs(context.Background(), stormlogLogs(lines)))
	require.NoError(t, w.Shutdown(context.Background()))
	want := resultKeys(t, whole)
	require.Len(t, want, 4)

	st := &memStorage{values: map[string][]byte{}}
	cfg := storageConfig()
	cfg.EmitTimeout = time.Minute
	stalled := &stallingLogs{release: make(chan struct{})}
	p := startLogsOn(t, cfg, st, stalled)
	require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(lines)))
	time.Sleep(cfg.JobIdleTimeout + 100*time.Millisecond)
	require.NoError(t, p.core.evaluate(context.Background(), false))
	p.checkpointNow()
	require.Contains(t, st.values, jobKey("delivered"), "kept while the downstream holds the results")
	_, flags, _, err := openEnvelope(st.values[jobKey("delivered")], "")
	require.NoError(t, err)
	assert.Equal(t, flagFinal, flags)
	p.crash()

	q, sink := startWithStorage(t, storageConfig(), st, nopSettings())
	require.NoError(t, q.core.evaluate(context.Background(), false))
	require.Eventually(t, func() bool { return len(resultKeys(t, sink)) == len(want) }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, want, resultKeys(t, sink), "re-emitted after the restart")
	q.checkpointNow()
	assert.NotContains(t, st.values, jobKey("delivered"), "accepted: the checkpoint leaves the storage")
	require.NoError(t, q.Shutdown(context.Background()))
}

// FuzzRestoreStoredValue: a stored checkpoint with bytes changed or cut
// off is refused by the envelope, whatever the change; and whatever bytes a
// storage returns, restoring them returns an error or a job, never panics.
func FuzzRestoreStoredValue(f *testing.F) {
	st := &memStorage{values: map[string][]byte{}}
	checkpointedJob(f, st, "fuzzed")
	value := st.values[jobKey("fuzzed")]
	f.Add(uint32(20), []byte{0x20}, uint32(0))
	f.Add(uint32(0), []byte{}, uint32(len(value)/2))
	f.Add(uint32(envelopeCRCAt), []byte{1, 0, 0, 0}, uint32(0))
	f.Fuzz(func(t *testing.T, at uint32, flip []byte, cut uint32) {
		d := bytes.Clone(value)
		for i, x := range flip {
			if j := int(at) + i; j < len(d) {
				d[j] ^= x
			}
		}
		if cut > 0 && int(cut) < len(d) {
			d = d[:cut]
		}
		payload, _, _, err := openEnvelope(d, legacyJobPrefix)
		if !bytes.Equal(d, value) && err == nil {
			t.Fatalf("a changed value (%d bytes, %x at %d, cut %d) is accepted", len(d), flip, at, cut)
		}
		cfg := storageConfig()
		s := store.New(cfg.storeConfig(strategyOf(t, cfg)))
		if err == nil {
			_, _ = s.Restore(payload, time.Now())
		}
		_, _ = s.Restore(d, time.Now())
	})
}

// TestAFailedWriteSaysItIsRetried: the warning of a checkpoint write that
// failed says the job is retried, as it is (issue 32: it said skipped).
func TestAFailedWriteSaysItIsRetried(t *testing.T) {
	st := &memStorage{values: map[string][]byte{}}
	set := nopSettings()
	logs, observed := observer.New(zap.WarnLevel)
	set.Logger = zap.New(logs)
	p, _ := startWithStorage(t, storageConfig(), st, set)
	const s = int64(time.Second)
	base := (time.Now().UnixNano()/s - 120) * s
	require.NoError(t, p.ConsumeLogs(context.Background(), stormlogLogs(jobTraffic{job: "retried", ranks: 1, stepNs: s / 10}.lines(base, base+s))))
	st.mu.Lock()
	st.failSet = errors.New("no space left on device")
	st.mu.Unlock()
	p.checkpointNow()
	st.mu.Lock()
	st.failSet = nil
	st.mu.Unlock()
	require.Equal(t, 1, observed.Len())
	assert.Equal(t, "collectiveattr: writing checkpoints failed; retried at the next checkpoint", observed.All()[0].Message)
	assert.NotContains(t, observed.All()[0].Message, "skipped")
	p.checkpointNow()
	assert.Contains(t, st.values, jobKey("retried"), "written at the next checkpoint")
	require.NoError(t, p.Shutdown(context.Background()))
}
