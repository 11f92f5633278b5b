package ingest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/collectiveattr/collectiveattr/inspector"
)

// inspectorOp is a verbose AllReduce record of host/pid lasting 2 ms from
// startUs (µs since the epoch).
func inspectorOp(host string, pid, commRank, startUs int64) inspector.Op {
	return inspector.Op{
		Host: host, PID: pid, CommID: "0x7f8c496ae9f661", CommName: "unknown",
		CommRank: commRank, NRanks: 2, NNodes: 1,
		Kind: inspector.Collective, Name: "AllReduce", Op: "all_reduce", Seq: 7, HasSeq: true,
		MessageBytes: 1 << 20, StartNs: startUs * 1000, EndNs: (startUs + 2000) * 1000,
		ExecTimeUs: 1900, TimingSource: "kernel_gpu", AlgoBWGBs: 1, BusBWGBs: 1,
		DumpTimestampUs: startUs + 5000,
	}
}

func inspectorLine(op inspector.Op) string {
	return strings.TrimSuffix(string(inspector.RecordWriter{Verbose: true}.Append(nil, &op)), "\n")
}

// inspectorLogs is one log record per body, as filelog gives them (string
// bodies), each with a log.file.path attribute.
func inspectorLogs(path string, bodies ...string) plog.Logs {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for _, b := range bodies {
		lr := lrs.AppendEmpty()
		lr.Body().SetStr(b)
		lr.Attributes().PutStr("log.file.path", path)
	}
	return ld
}

// rankMetrics is one device-used point of (job, rank) whose resource
// names its host and pid.
func rankMetrics(job string, rank int64, host string, pid int64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	a := rm.Resource().Attributes()
	a.PutStr("training.job.id", job)
	a.PutInt("training.rank", rank)
	a.PutStr("host.name", host)
	a.PutInt("process.pid", pid)
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("gpu.memory.device.used")
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(1767225600000000000)
	dp.SetIntValue(1 << 30)
	return md
}

func markerTimes(records []Record) (jobs []string, ranks []int64, times []int64) {
	for _, r := range records {
		jobs = append(jobs, r.JobID)
		ranks = append(ranks, r.Rank)
		times = append(times, r.TimestampNs)
	}
	return
}

const t0Us = 1767225600000000 // 2026-01-01T00:00:00Z

func TestInspectorRecordJoinsByHostAndPID(t *testing.T) {
	c, _ := newTestConverter(Config{})
	var got collected
	got.collect(c.Metrics(rankMetrics("job-a", 3, "node01", 4242)))
	got = collected{}
	got.collect(c.Logs(inspectorLogs("/d/node01-pid4242.log", inspectorLine(inspectorOp("node01", 4242, 1, t0Us)))))
	require.Empty(t, got.skips)
	jobs, ranks, times := markerTimes(got.records)
	assert.Equal(t, []string{"job-a", "job-a"}, jobs)
	assert.Equal(t, []int64{3, 3}, ranks)
	assert.Equal(t, []int64{t0Us * 1000, (t0Us + 2000) * 1000}, times)
	for _, r := range got.records {
		assert.Equal(t, KindStormlog, r.Kind)
		assert.Equal(t, StormlogMarker, r.Stormlog, "a marker, never a sample")
		assert.Equal(t, "nccl_inspector", r.Event.Collector)
	}
	st := c.InspectorStats()
	assert.Equal(t, uint64(1), st.Read)
	assert.Equal(t, uint64(1), st.Joined)
}

func TestInspectorMapBodyEqualsStringBody(t *testing.T) {
	line := inspectorLine(inspectorOp("node01", 4242, 0, t0Us))
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(line), &raw))
	ld := plog.NewLogs()
	// json_parser turns every number into a double.
	require.NoError(t, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetEmptyMap().FromRaw(raw))

	var fromStr, fromMap collected
	c1, _ := newTestConverter(Config{})
	c1.Metrics(rankMetrics("job-a", 0, "node01", 4242))(func(Read) bool { return true })
	fromStr.collect(c1.Logs(inspectorLogs("f", line)))
	c2, _ := newTestConverter(Config{})
	c2.Metrics(rankMetrics("job-a", 0, "node01", 4242))(func(Read) bool { return true })
	fromMap.collect(c2.Logs(ld))
	require.Empty(t, fromMap.skips)
	require.Len(t, fromStr.records, 2)
	assert.Equal(t, fromStr.records, fromMap.records)
}

func TestInspectorStormlogTeachesTheJoin(t *testing.T) {
	c, _ := newTestConverter(Config{})
	sl := `{"schema_version":2,"timestamp_ns":1767225600000000000,"event_type":"sample","collector":"stormlog.cuda_tracker","sampling_interval_ms":100,"pid":77,"host":"node02","job_id":"job-s","rank":5,"local_rank":1,"world_size":8,"device_id":1,"allocator_allocated_bytes":1,"allocator_reserved_bytes":2,"allocator_change_bytes":0,"device_used_bytes":3,"device_free_bytes":4,"device_total_bytes":7,"allocator_active_bytes":null,"allocator_inactive_bytes":null,"context":null,"metadata":{}}`
	var got collected
	got.collect(c.Logs(inspectorLogs("s", sl, inspectorLine(inspectorOp("node02", 77, 0, t0Us)))))
	require.Empty(t, got.skips)
	require.Len(t, got.records, 3)
	assert.Equal(t, "job-s", got.records[1].JobID)
	assert.Equal(t, int64(5), got.records[1].Rank)
}

func TestInspectorHeldThenJoined(t *testing.T) {
	c, clk := newTestConverter(Config{})
	var got collected
	got.collect(c.Logs(inspectorLogs("f", inspectorLine(inspectorOp("node01", 4242, 0, t0Us)))))
	assert.Empty(t, got.records)
	assert.Empty(t, got.skips, "held, not yet given up")
	assert.Equal(t, 1, c.InspectorStats().Held)

	clk.advance(10 * time.Second)
	c.Metrics(rankMetrics("job-a", 2, "node01", 4242))(func(Read) bool { return true })
	got = collected{}
	got.collect(c.RetryInspector())
	require.Len(t, got.records, 2)
	assert.Equal(t, "job-a", got.records[0].JobID)
	assert.Equal(t, int64(2), got.records[0].Rank)
	assert.Equal(t, 0, c.InspectorStats().Held)
}

func TestInspectorGivenUpAfterHold(t *testing.T) {
	c, clk := newTestConverter(Config{Inspector: InspectorConfig{Hold: 5 * time.Second}})
	var got collected
	got.collect(c.Logs(inspectorLogs("f", inspectorLine(inspectorOp("node09", 1, 0, t0Us)))))
	clk.advance(4 * time.Second)
	got.collect(c.RetryInspector())
	assert.Empty(t, got.skips)
	clk.advance(2 * time.Second)
	got.collect(c.RetryInspector())
	require.Len(t, got.skips, 1)
	assert.Equal(t, SkipUnjoinable, got.skips[0].Reason)
	assert.Contains(t, got.skips[0].Detail, "node09 pid 1")
	assert.Equal(t, uint64(1), c.InspectorStats().Unjoinable)
}

// Two jobs on one host, different pids: each record goes to its own job.
func TestInspectorTwoJobsOneHost(t *testing.T) {
	c, _ := newTestConverter(Config{})
	c.Metrics(rankMetrics("job-a", 0, "node01", 100))(func(Read) bool { return true })
	c.Metrics(rankMetrics("job-b", 0, "node01", 200))(func(Read) bool { return true })
	var got collected
	got.collect(c.Logs(inspectorLogs("f",
		inspectorLine(inspectorOp("node01", 200, 0, t0Us)),
		inspectorLine(inspectorOp("node01", 100, 0, t0Us+10)))))
	jobs, _, _ := markerTimes(got.records)
	assert.Equal(t, []string{"job-b", "job-b", "job-a", "job-a"}, jobs)
}

// A pid reused by another job: while both mappings live the record is
// given to neither; once the first job's expired it goes to the second.
func TestInspectorReusedPID(t *testing.T) {
	c, clk := newTestConverter(Config{IdentityTTL: time.Minute, Inspector: InspectorConfig{Hold: time.Second}})
	c.Metrics(rankMetrics("job-a", 0, "node01", 100))(func(Read) bool { return true })
	clk.advance(30 * time.Second)
	c.Metrics(rankMetrics("job-b", 4, "node01", 100))(func(Read) bool { return true })
	var got collected
	got.collect(c.Logs(inspectorLogs("f", inspectorLine(inspectorOp("node01", 100, 0, t0Us)))))
	assert.Empty(t, got.records, "ambiguous: given to neither job")
	clk.advance(2 * time.Second)
	got.collect(c.RetryInspector())
	require.Len(t, got.skips, 1)
	assert.Equal(t, SkipUnjoinable, got.skips[0].Reason)
	assert.Contains(t, got.skips[0].Detail, "claimed by 2 ranks")

	clk.advance(30 * time.Second) // job-a silent for 62 s > TTL; job-b for 32 s
	got = collected{}
	got.collect(c.Logs(inspectorLogs("f", inspectorLine(inspectorOp("node01", 100, 0, t0Us+1)))))
	jobs, ranks, _ := markerTimes(got.records)
	assert.Equal(t, []string{"job-b", "job-b"}, jobs)
	assert.Equal(t, []int64{4, 4}, ranks)

	clk.advance(2 * time.Minute) // job-b expired too: nobody owns the pid
	got = collected{}
	got.collect(c.Logs(inspectorLogs("f", inspectorLine(inspectorOp("node01", 100, 0, t0Us+2)))))
	assert.Empty(t, got.records)
	assert.Equal(t, 1, c.InspectorStats().Held)
}

// A v4.3 op line takes its header from the dump_stats line before it in
// the same file, not from another file's.
func TestInspectorContextPerFile(t *testing.T) {
	c, _ := newTestConverter(Config{})
	c.Metrics(rankMetrics("job-a", 0, "node01", 100))(func(Read) bool { return true })
	c.Metrics(rankMetrics("job-a", 1, "node01", 200))(func(Read) bool { return true })
	ctx := func(pid int64) string {
		return `{"header":{"id":"0xabc","comm_name":"unknown","rank":0,"n_ranks":2,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.3","dump_timestamp_us":1767225600100000,"hostname":"node01","pid":` + itoa(pid) + `},"dump_stats":{"coll_records":1,"p2p_records":0}}`
	}
	op := `{"coll_perf":{"coll":"AllReduce","coll_sn":1,"coll_msg_size_bytes":1048576,"coll_exec_time_us":100,"coll_timing_source":"kernel_gpu","coll_algobw_gbs":1.0,"coll_busbw_gbs":1.0}}`
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for _, l := range []struct{ path, body string }{
		{"/d/node01-pid100.log", ctx(100)}, {"/d/node01-pid200.log", ctx(200)},
		{"/d/node01-pid100.log", op}, {"/d/node01-pid200.log", op},
	} {
		lr := lrs.AppendEmpty()
		lr.Body().SetStr(l.body)
		lr.Attributes().PutStr("log.file.path", l.path)
	}
	var got collected
	got.collect(c.Logs(ld))
	require.Empty(t, got.skips)
	_, ranks, _ := markerTimes(got.records)
	assert.Equal(t, []int64{0, 0, 1, 1}, ranks)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestInspectorBadBodies(t *testing.T) {
	good := inspectorLine(inspectorOp("node01", 4242, 0, t0Us))
	for _, tc := range []struct {
		name, body string
		want       SkipReason // "" = ignored without a skip
	}{
		{"truncated", good[:len(good)/2], SkipInvalidValue},
		{"wrong type", strings.Replace(good, `"rank":0`, `"rank":"zero"`, 1), SkipInvalidValue},
		{"huge number", strings.Replace(good, `"coll_sn":7`, `"coll_sn":123456789012345678901234567890`, 1), SkipInvalidValue},
		{"unknown version", strings.Replace(good, `"v4.0"`, `"v5.0"`, 1), SkipInvalidValue},
		{"not an op", `{"header":{},"metadata":{"inspector_output_format_version":"v4.0"}}`, ""},
		{"other json", `{"msg":"hello"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestConverter(Config{})
			c.Metrics(rankMetrics("job-a", 0, "node01", 4242))(func(Read) bool { return true })
			var got collected
			got.collect(c.Logs(inspectorLogs("f", tc.body)))
			assert.Empty(t, got.records)
			if tc.want == "" {
				assert.Empty(t, got.skips)
				return
			}
			require.Len(t, got.skips, 1)
			assert.Equal(t, tc.want, got.skips[0].Reason)
			assert.Contains(t, got.skips[0].Detail, "NCCL Inspector record")
		})
	}
}

func TestInspectorAcceptsOddValues(t *testing.T) {
	c, _ := newTestConverter(Config{})
	c.Metrics(rankMetrics("job-a", 0, "node01", 4242))(func(Read) bool { return true })
	line := inspectorLine(inspectorOp("node01", 4242, 0, t0Us))
	line = strings.Replace(line, `"AllReduce"`, `"Invalid"`, 1)
	line = strings.Replace(line, `"coll_msg_size_bytes":1048576`, `"coll_msg_size_bytes":18446744073709551615`, 1)
	line = strings.Replace(line, `"coll_busbw_gbs":1.000000`, `"coll_busbw_gbs":"nan"`, 1)
	var got collected
	got.collect(c.Logs(inspectorLogs("f", line)))
	require.Empty(t, got.skips)
	assert.Len(t, got.records, 2)
	st := c.InspectorStats()
	assert.Equal(t, uint64(1), st.InvalidOps)
	assert.Equal(t, uint64(1), st.WrappedSizes)
	assert.Equal(t, uint64(1), st.NaNBandwidths)
}
