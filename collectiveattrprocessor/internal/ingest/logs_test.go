package ingest

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

func readLogs(t *testing.T, name string) plog.Logs {
	t.Helper()
	ld, err := golden.ReadLogs(filepath.Join("testdata", "logs", name))
	require.NoError(t, err)
	return ld
}

func convertLogs(t *testing.T, c *Converter, ld plog.Logs) collected {
	t.Helper()
	var m plog.ProtoMarshaler
	before, err := m.MarshalLogs(ld)
	require.NoError(t, err)
	var got collected
	got.collect(c.Logs(ld))
	after, err := m.MarshalLogs(ld)
	require.NoError(t, err)
	require.Equal(t, before, after, "input mutated")
	return got
}

// decoded is the engine decoder's reading of a JSON record: the expectation
// for what the converter hands on.
func decoded(t *testing.T, text string) telemetry.Event {
	t.Helper()
	ev, err := telemetry.DecodeRecord([]byte(text))
	require.NoError(t, err)
	return ev
}

func TestConvertLogsStormlogRecords(t *testing.T) {
	c, _ := newTestConverter(Config{})
	ld := readLogs(t, "stormlog.yaml")
	got := convertLogs(t, c, ld)

	body := func(i int) string {
		return strings.TrimSpace(ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(i).Body().Str())
	}
	ev0, ev1, ev2 := decoded(t, body(0)), decoded(t, body(1)), decoded(t, body(2))
	// The map body, written out by hand as the JSON line it stands for.
	evMap := decoded(t, `{"schema_version":3,"session_id":"sess-map","timestamp_ns":1767225600000000000,`+
		`"event_type":"sample","collector":"stormlog.cuda_tracker","sampling_interval_ms":50,"pid":4100,`+
		`"host":"node-0","job_id":null,"rank":1,"local_rank":1,"world_size":2,"device_id":1,`+
		`"allocator_allocated_bytes":38343475200,"allocator_reserved_bytes":40899706880,`+
		`"allocator_active_bytes":null,"allocator_inactive_bytes":2556231680,"allocator_change_bytes":0,`+
		`"device_used_bytes":40939365770,"device_free_bytes":44959980150,"device_total_bytes":85899345920,`+
		`"context":"NCCL all_reduce \"bucket 3\" \u00e9","metadata":{"backend":"cuda","tags":["a",true,0.5]}}`)

	want := []Record{
		{Kind: KindStormlog, JobID: "run-7f3c", Rank: 1, WorldSize: 8, Host: "node-a", TimestampNs: 1767225600123456789, Event: ev0, Stormlog: StormlogSample},
		{Kind: KindStormlog, JobID: "sess-1", Rank: 0, WorldSize: 2, Host: "", TimestampNs: 1767225600200000000, Event: ev1, Stormlog: StormlogMarker | StormlogBoundary},
		{Kind: KindStormlog, JobID: "res-job", Rank: 0, WorldSize: 1, Host: "node-z", TimestampNs: 1767225600300000000, Event: ev2, Stormlog: StormlogMarker},
		{Kind: KindStormlog, JobID: "sess-map", Rank: 1, WorldSize: 2, Host: "node-0", TimestampNs: 1767225600000000000, Event: evMap, Stormlog: StormlogSample | StormlogMarker},
	}
	assert.Equal(t, want, got.records)
	assert.Equal(t, "phase_enter", got.records[1].Event.EventType, "boundaries keep every field")
	assert.NotNil(t, got.records[1].Event.Metadata["phase_scope"])

	require.Len(t, got.skips, 5)
	for _, s := range got.skips {
		assert.Equal(t, SkipInvalidValue, s.Reason)
	}
	assert.Equal(t, "stormlog record: rank must be < world_size", got.skips[0].Detail)
	assert.Contains(t, got.skips[2].Detail, "schema_version must be an integer")
	assert.Contains(t, got.skips[3].Detail, "Missing required telemetry fields")
	assert.Equal(t, "log body holds NaN or an infinity", got.skips[4].Detail)
}

func TestConvertLogsLearnDeviceMapping(t *testing.T) {
	c, _ := newTestConverter(Config{})
	convertLogs(t, c, readLogs(t, "stormlog.yaml"))
	// Record 0: host node-a, device 1, rank 1 of run-7f3c. A DCGM point of
	// that GPU now joins it; the v3 record of host "unknown" taught nothing.
	got := convertMetrics(t, c, dcgmUsed("node-a", "1", 1767225600200000000, 100))
	assert.Empty(t, got.skips)
	assert.Equal(t, 2, c.Stats().IdentityMappings, "node-a/1 and node-0/1; node-z has device -1, sess-1 host unknown")
	assert.Equal(t, 1, c.Stats().Series)
}

func TestConvertLogsFutureTimestamp(t *testing.T) {
	c, _ := newTestConverter(Config{})
	ld := plog.NewLogs()
	line := `{"schema_version":2,"timestamp_ns":1767232860000000000,"event_type":"sample","collector":"c","sampling_interval_ms":0,"pid":1,"host":"h","device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":1,"allocator_active_bytes":null,"allocator_inactive_bytes":null,"allocator_change_bytes":0,"device_used_bytes":1,"device_free_bytes":null,"device_total_bytes":null,"context":null,"metadata":{}}`
	ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr(line)
	got := convertLogs(t, c, ld)
	assert.Empty(t, got.records)
	assert.Equal(t, []SkipReason{SkipFuture}, got.reasons())
}

func TestVersionLexeme(t *testing.T) {
	for in, want := range map[string]string{
		`{"schema_version":2}`:       "2",
		`{"schema_version" : 3.0 ,}`: "3.0",
		`{"schema_version":"2"}`:     "",
		`{"schema_version"}`:         "",
		`{"schema":2}`:               "",
		`{"schema_version":`:         "",
		` { "schema_version": 4}`:    "4",
		// Only the object's own member counts, the last when repeated, as
		// Python's json reads it.
		`{"metadata":{"schema_version":1},"schema_version":2}`:             "2",
		`{"context":"\"schema_version\": 9","schema_version":3}`:           "3",
		`{"metadata":{"schema_version":2}}`:                                "",
		`{"a":["schema_version"],"schema_version" :4}`:                     "4",
		`{"schema_version":1,"x":{"schema_version":5},"schema_version":2}`: "2",
		`{"schema_version":2,"schema_version":1}`:                          "1",
		`{"schema_version":2,"m":{"schema_version":1}}`:                    "2",
	} {
		assert.Equal(t, want, versionLexeme(in), in)
	}
}

// TestIndexSchemaVersionKeyIsStringsIndex checks the tail-first search
// against strings.Index on random texts built from pieces of the key, so
// that partial, overlapping and repeated keys are common.
func TestIndexSchemaVersionKeyIsStringsIndex(t *testing.T) {
	pieces := []string{`"`, `"schema_`, `version"`, `"schema_version"`, `schema_version`, `"schema_versio`, `_version"`, `v`, `:2,`, ` `, `{`, `}`, `"schema_"`}
	rng := rand.New(rand.NewPCG(1, 2))
	found := 0
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		want := strings.Index(s, schemaVersionKey)
		require.Equal(t, want, indexSchemaVersionKey(s), "%q", s)
		if want >= 0 {
			found++
		}
	}
	assert.Greater(t, found, 1000, "texts holding the key")
}
