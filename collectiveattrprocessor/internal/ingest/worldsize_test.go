package ingest

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/plog"
)

// A declared world size above limits.max_ranks_per_job is no job's that the
// processor holds: one such record must not become the job's expected world
// size (issue 32 item 4). The item is kept with its world size unknown and
// the value counted, on the metrics path and the stormlog path alike; the
// limit itself is a valid world size.
func TestWorldSizeAboveTheRankLimitIsIgnored(t *testing.T) {
	ts := testNow.UnixNano()
	for _, tc := range []struct {
		declared, believed int64
	}{{64, 64}, {65, 0}, {1 << 41, 0}} {
		c, _ := newTestConverter(Config{MaxWorldSize: 64})
		got := convertMetrics(t, c, gaugeBatch(map[string]any{"training.job.id": "j", "training.rank": int64(0), "training.world_size": tc.declared},
			used(ts, 2<<30), reserved(ts, 1<<30)))
		assert.Empty(t, got.reasons(), "metrics, world size %d", tc.declared)
		if assert.Len(t, got.records, 1) {
			assert.Equal(t, tc.believed, got.records[0].WorldSize, "metrics, world size %d", tc.declared)
		}

		ld := plog.NewLogs()
		ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr(
			`{"schema_version":2,"timestamp_ns":` + strconv.FormatInt(ts, 10) + `,"event_type":"sample","collector":"stormlog.cuda_tracker",` +
				`"sampling_interval_ms":100,"pid":7,"host":"h","job_id":"j","rank":0,"local_rank":0,"world_size":` + strconv.FormatInt(tc.declared, 10) +
				`,"device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":1,"allocator_change_bytes":0,"allocator_active_bytes":null,"allocator_inactive_bytes":null,"context":null,"metadata":{},"device_used_bytes":2,` +
				`"device_free_bytes":null,"device_total_bytes":null}`)
		gotLogs := convertLogs(t, c, ld)
		assert.Empty(t, gotLogs.reasons(), "stormlog, world size %d", tc.declared)
		if assert.Len(t, gotLogs.records, 1) {
			assert.Equal(t, tc.believed, gotLogs.records[0].WorldSize, "stormlog, world size %d", tc.declared)
		}
		ignored := int64(0)
		if tc.believed == 0 {
			ignored = 2
		}
		assert.Equal(t, ignored, c.TakeWorldSizesIgnored(), "world size %d", tc.declared)
		assert.Zero(t, c.TakeWorldSizesIgnored(), "taken")
	}
}

// A stormlog sample's device values are bounded as a metrics sample's are:
// with no device total, more than any device holds (64 TiB) is an invalid
// value, not a sample.
func TestStormlogDeviceUsedAboveAnyDeviceIsInvalid(t *testing.T) {
	c, _ := newTestConverter(Config{})
	ts := strconv.FormatInt(testNow.UnixNano(), 10)
	line := func(used int64) string {
		return `{"schema_version":2,"timestamp_ns":` + ts + `,"event_type":"sample","collector":"stormlog.cuda_tracker",` +
			`"sampling_interval_ms":100,"pid":7,"host":"h","job_id":"j","rank":0,"local_rank":0,"world_size":1,` +
			`"device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":1,"allocator_change_bytes":0,"allocator_active_bytes":null,"allocator_inactive_bytes":null,"context":null,"metadata":{},"device_used_bytes":` +
			strconv.FormatInt(used, 10) + `,"device_free_bytes":null,"device_total_bytes":null}`
	}
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	lrs.AppendEmpty().Body().SetStr(line(maxDeviceBytes))
	lrs.AppendEmpty().Body().SetStr(line(1 << 50)) // 1 PiB
	got := convertLogs(t, c, ld)
	assert.Equal(t, []SkipReason{SkipInvalidValue}, got.reasons())
	assert.Len(t, got.records, 1)
}
