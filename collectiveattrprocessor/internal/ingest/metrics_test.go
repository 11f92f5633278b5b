package ingest

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

const mibBytes = 1 << 20

func TestConvertMetricsDCGMJoinedByHostAndDevice(t *testing.T) {
	c, _ := newTestConverter(Config{})

	got := convertMetrics(t, c, readMetrics(t, "allocator_node_a.yaml"))
	assert.Empty(t, got.records, "allocator points alone form no sample")
	assert.Empty(t, got.skips)

	got = convertMetrics(t, c, readMetrics(t, "dcgm_node_a.yaml"))
	want := sampleSpec{
		job: "job-a", rank: 3, localRank: 3, worldSize: 16, device: 3, host: "node-a",
		ts:   1767225600020000000,
		used: 30720 * mibBytes, free: 50176 * mibBytes,
		total:    (30720 + 50176 + 1024) * mibBytes,   // FB_TOTAL absent: used + free + reserved
		reserved: 21474836480, allocated: 17179869184, // nearest allocator points (20 ms away)
		active: -1, inactive: -1,
	}.record()
	require.Equal(t, []Record{want}, got.records)
	assert.Equal(t, []SkipReason{SkipUnjoinable}, got.reasons(), "GPU 5 never reported a rank")
}

func TestConvertMetricsDCGMBeforeAnyRankIsUnjoinable(t *testing.T) {
	c, _ := newTestConverter(Config{})
	got := convertMetrics(t, c, readMetrics(t, "dcgm_node_a.yaml"))
	assert.Empty(t, got.records)
	// Every DCGM memory point (used x2, free, reserved) lacks a mapping.
	assert.Equal(t, []SkipReason{SkipUnjoinable, SkipUnjoinable, SkipUnjoinable, SkipUnjoinable}, got.reasons())
}

func TestConvertMetricsIdentityMappingExpires(t *testing.T) {
	c, clk := newTestConverter(Config{IdentityTTL: time.Minute})
	convertMetrics(t, c, readMetrics(t, "allocator_node_a.yaml"))
	clk.advance(61 * time.Second)
	c.Expire()
	assert.Equal(t, 0, c.Stats().IdentityMappings)
	got := convertMetrics(t, c, readMetrics(t, "dcgm_node_a.yaml"))
	assert.Empty(t, got.records)
	assert.Len(t, got.skips, 4)
	for _, s := range got.skips {
		assert.Equal(t, SkipUnjoinable, s.Reason)
	}
}

// TestConvertMetricsIdentityMappingExpiresWhileUsed: device points joined
// to a mapping do not keep it alive; it expires identity_ttl after its
// owner's last own item, however many device points use it in between.
func TestConvertMetricsIdentityMappingExpiresWhileUsed(t *testing.T) {
	c, clk := newTestConverter(Config{IdentityTTL: time.Minute})
	convertMetrics(t, c, readMetrics(t, "allocator_node_a.yaml"))
	clk.advance(50 * time.Second)
	c.Expire()
	require.Equal(t, 1, c.Stats().IdentityMappings)
	got := convertMetrics(t, c, dcgmUsed("node-a", "3", 1767225610000000000, 100))
	require.Empty(t, got.skips, "50 s after the owner's last item: joined")
	clk.advance(11 * time.Second)
	// Before any Expire call the lookup itself refuses the stale mapping.
	got = convertMetrics(t, c, dcgmUsed("node-a", "3", 1767225611000000000, 100))
	assert.Equal(t, []SkipReason{SkipUnjoinable}, got.reasons(), "61 s after the owner's last item, used 11 s ago")
	c.Expire()
	assert.Equal(t, 0, c.Stats().IdentityMappings, "expired although used")
}

// TestConvertMetricsOwnerRefreshesItsMapping: the owner's own telemetry
// keeps its mapping alive past identity_ttl.
func TestConvertMetricsOwnerRefreshesItsMapping(t *testing.T) {
	c, clk := newTestConverter(Config{IdentityTTL: time.Minute})
	convertMetrics(t, c, readMetrics(t, "allocator_node_a.yaml"))
	clk.advance(50 * time.Second)
	convertMetrics(t, c, readMetrics(t, "allocator_node_a.yaml"))
	clk.advance(50 * time.Second)
	c.Expire()
	require.Equal(t, 1, c.Stats().IdentityMappings)
	got := convertMetrics(t, c, dcgmUsed("node-a", "3", 1767225610000000000, 100))
	assert.Empty(t, got.skips)
}

// TestConvertMetricsDevicePointKeepsItsOwnJob: a device point that carries
// a job id is joined only to a mapping of that job; the GPU's last user
// being another job makes it unjoinable, never that job's data.
func TestConvertMetricsDevicePointKeepsItsOwnJob(t *testing.T) {
	c, _ := newTestConverter(Config{})
	convertMetrics(t, c, readMetrics(t, "allocator_node_a.yaml")) // (node-a, 3) -> (job-a, 3)

	pointOf := func(job string) pmetric.Metrics {
		return gaugeBatch(nil, gaugePoint{name: "DCGM_FI_DEV_FB_USED", ts: 1767225600020000000, value: 100,
			attrs: map[string]any{"Hostname": "node-a", "gpu": "3", "training.job.id": job}})
	}
	got := convertMetrics(t, c, pointOf("job-b"))
	assert.Empty(t, got.records, "job-b's point must not become job-a's")
	require.Equal(t, []SkipReason{SkipUnjoinable}, got.reasons())
	assert.Contains(t, got.skips[0].Detail, "job id")

	got = convertMetrics(t, c, pointOf("job-a"))
	assert.Empty(t, got.skips, "the point of the mapping's own job joins")

	// The job id on the resource counts as the point's own too.
	md := dcgmUsed("node-a", "3", 1767225600020000000, 100)
	md.ResourceMetrics().At(0).Resource().Attributes().PutStr("k8s.job.name", "job-b")
	got = convertMetrics(t, c, md)
	assert.Equal(t, []SkipReason{SkipUnjoinable}, got.reasons())
}

// TestConvertMetricsDeviceResourceFollowsItsMapping: a resource that names
// no rank, joined by its host and device, is joined again in every batch,
// so that it follows its device to the rank that claims it now (the first
// rank went silent before the second claimed the device: a handover).
func TestConvertMetricsDeviceResourceFollowsItsMapping(t *testing.T) {
	const t0 = int64(1767225600000000000)
	c, clk := newTestConverter(Config{})
	batch := func(rank, ts int64) pmetric.Metrics {
		md := pmetric.NewMetrics()
		for _, res := range []struct {
			attrs []string
			pt    gaugePoint
		}{
			{[]string{"training.job.id", "j", "training.rank", "", "host.name", "node-a", "gpu.index", "0"}, reserved(ts, 5)},
			{[]string{"host.name", "node-a", "gpu.index", "0"}, used(ts, 10)},
		} {
			rm := md.ResourceMetrics().AppendEmpty()
			for i := 0; i < len(res.attrs); i += 2 {
				if res.attrs[i] == "training.rank" {
					rm.Resource().Attributes().PutInt("training.rank", rank)
				} else {
					rm.Resource().Attributes().PutStr(res.attrs[i], res.attrs[i+1])
				}
			}
			m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
			m.SetName(res.pt.name)
			dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
			dp.SetTimestamp(pcommon.Timestamp(res.pt.ts))
			dp.SetIntValue(res.pt.value)
		}
		return md
	}
	for i, rank := range []int64{0, 0, 1, 1} {
		got := convertMetrics(t, c, batch(rank, t0+int64(i)*int64(time.Second)))
		require.Empty(t, got.skips, "batch %d", i)
		require.Len(t, got.records, 1, "batch %d", i)
		assert.Equal(t, rank, got.records[0].Rank, "batch %d", i)
		clk.advance(3 * time.Second)
	}
}

// TestConvertMetricsRepeatedIdentityKeepsItsMapping: a rank that keeps
// reporting the same identity is not learned again on every resource (the
// identity memo), yet its mapping's last use is refreshed, so
// it never expires while the rank reports; a changed identity is learned at
// once.
func TestConvertMetricsRepeatedIdentityKeepsItsMapping(t *testing.T) {
	const t0 = int64(1767225600000000000)
	c, clk := newTestConverter(Config{IdentityTTL: 3 * time.Second})
	res := map[string]any{"training.job.id": "j", "training.rank": int64(1), "host.name": "node-a", "gpu.index": int64(1)}
	for i := range int64(20) { // every 0.5 s for 10 s
		// The attributes in one order every time, as an exporter sends
		// them: the identity memo answers, and must refresh the mapping.
		md := gaugeBatch(nil, reserved(t0+i*int64(500*time.Millisecond), 50))
		attrs := md.ResourceMetrics().At(0).Resource().Attributes()
		attrs.PutStr("training.job.id", "j")
		attrs.PutInt("training.rank", 1)
		attrs.PutStr("host.name", "node-a")
		attrs.PutInt("gpu.index", 1)
		convertMetrics(t, c, md)
		clk.advance(500 * time.Millisecond)
		c.Expire()
		require.Equal(t, 1, c.Stats().IdentityMappings, "step %d", i)
	}
	got := convertMetrics(t, c, dcgmUsed("node-a", "1", t0+19*int64(500*time.Millisecond), 100))
	require.Len(t, got.records, 1)
	assert.Equal(t, "j", got.records[0].JobID)
	assert.Equal(t, int64(1), got.records[0].Rank)

	// The same rank moves to another GPU: the new device joins at once.
	res["gpu.index"] = int64(2)
	convertMetrics(t, c, gaugeBatch(res, reserved(t0+20*int64(500*time.Millisecond), 50)))
	got = convertMetrics(t, c, dcgmUsed("node-a", "2", t0+20*int64(500*time.Millisecond), 100))
	require.Len(t, got.records, 1)
	assert.Equal(t, int64(2), got.records[0].Event.DeviceID)
}

func TestConvertMetricsSemconv(t *testing.T) {
	c, _ := newTestConverter(Config{})
	got := convertMetrics(t, c, readMetrics(t, "semconv.yaml"))
	want := sampleSpec{
		job: "elastic-7", rank: 1, localRank: 1, worldSize: 8, device: 1, host: "node-b",
		ts:   1767225601000000000,
		used: 42949672960, free: -1, total: 85899345920,
		reserved: 40802189312, allocated: 40802189312, // 180 ms away; allocated defaults to reserved
		active: -1, inactive: -1,
	}.record()
	require.Equal(t, []Record{want}, got.records)
	assert.Empty(t, got.skips)
}

func TestConvertMetricsInProcess(t *testing.T) {
	c, _ := newTestConverter(Config{})
	got := convertMetrics(t, c, readMetrics(t, "inprocess.yaml"))
	want := []Record{
		sampleSpec{
			job: "job-b", rank: 0, localRank: 0, worldSize: 2, device: 0, host: "node-c",
			ts:   1767225602000000000,
			used: 12884901888, free: 73014444032, total: 85899345920,
			reserved: 10737418240, allocated: 9663676416, active: 9663676416, inactive: 1073741824,
		}.record(),
		// The second collection reported no free/allocated/active/inactive:
		// the points of the first one, 100 ms earlier, are within tolerance.
		sampleSpec{
			job: "job-b", rank: 0, localRank: 0, worldSize: 2, device: 0, host: "node-c",
			ts:   1767225602100000000,
			used: 14495514624, free: 73014444032, total: 85899345920,
			reserved: 10737418240, allocated: 9663676416, active: 9663676416, inactive: 1073741824,
		}.record(),
		sampleSpec{
			job: "job-b", rank: 1, localRank: 1, worldSize: 2, device: 1, host: "node-c",
			ts:   1767225602000000000,
			used: 13958643712, free: 71940702208, total: 85899345920,
			reserved: 11811160064, allocated: 11811160064, active: -1, inactive: -1,
		}.record(),
	}
	require.Equal(t, want, got.records)
	assert.Equal(t, []SkipReason{
		SkipInvalidValue, // NaN
		SkipInvalidValue, // negative
		SkipInvalidValue, // 2^60 bytes
		SkipFuture,       // future
		SkipInvalidValue, // rank 2 of world 2
		SkipInvalidValue, // rank "one"
		SkipNoIdentity,   // nothing to identify
		SkipInvalidValue, // histogram
	}, got.reasons())
}

// gaugeBatch builds a one-resource batch of single-point gauges.
type gaugePoint struct {
	name  string
	ts    int64
	value int64
	attrs map[string]any
}

func gaugeBatch(res map[string]any, pts ...gaugePoint) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	_ = rm.Resource().Attributes().FromRaw(res)
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	for _, p := range pts {
		m := ms.AppendEmpty()
		m.SetName(p.name)
		dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
		dp.SetTimestamp(pcommon.Timestamp(p.ts))
		dp.SetIntValue(p.value)
		_ = dp.Attributes().FromRaw(p.attrs)
	}
	return md
}

func dcgmUsed(host, gpu string, ts int64, miB int64) pmetric.Metrics {
	return gaugeBatch(nil, gaugePoint{name: "DCGM_FI_DEV_FB_USED", ts: ts, value: miB,
		attrs: map[string]any{"Hostname": host, "gpu": gpu}})
}

var rank0 = map[string]any{"training.job.id": "j", "training.rank": int64(0)}

func used(ts, v int64) gaugePoint {
	return gaugePoint{name: "gpu.memory.device.used", ts: ts, value: v}
}

func reserved(ts, v int64) gaugePoint {
	return gaugePoint{name: "gpu.memory.allocator.reserved", ts: ts, value: v}
}

func TestConvertMetricsAsOfJoinAcrossBatches(t *testing.T) {
	const t0 = int64(1767225600000000000)
	tol := int64(250 * time.Millisecond)
	tests := []struct {
		name     string
		batches  [][]gaugePoint
		emitted  []int // number of samples after each batch
		wantTs   []int64
		wantResv []int64
		skips    []SkipReason // over all batches
	}{
		{
			name:    "used then reserved in a later batch",
			batches: [][]gaugePoint{{used(t0, 100)}, {reserved(t0+10, 50)}},
			emitted: []int{0, 1}, wantTs: []int64{t0}, wantResv: []int64{50},
		},
		{
			name:    "reserved then used in a later batch",
			batches: [][]gaugePoint{{reserved(t0, 50)}, {used(t0+tol, 100)}},
			emitted: []int{0, 1}, wantTs: []int64{t0 + tol}, wantResv: []int64{50},
		},
		{
			name:    "exactly the tolerance joins, either side",
			batches: [][]gaugePoint{{used(t0, 100), used(t0+2*tol, 101)}, {reserved(t0+tol, 50)}},
			emitted: []int{0, 2}, wantTs: []int64{t0, t0 + 2*tol}, wantResv: []int64{50, 50},
		},
		{
			name:    "one nanosecond past the tolerance stays pending",
			batches: [][]gaugePoint{{used(t0, 100)}, {reserved(t0+tol+1, 50)}},
			emitted: []int{0, 0},
			// the newer reserved point proves no partner will come
			skips: []SkipReason{SkipUnjoinable},
		},
		{
			name:    "pending until a reserved point past it arrives",
			batches: [][]gaugePoint{{used(t0, 100)}, {reserved(t0-tol-1, 40)}, {reserved(t0+tol+1, 50)}},
			emitted: []int{0, 0, 0},
			// the reserved point before the horizon leaves unpartnered
			skips: []SkipReason{SkipOrphaned, SkipUnjoinable},
		},
		{
			name:    "nearest reserved wins",
			batches: [][]gaugePoint{{reserved(t0-100, 40), reserved(t0+30, 60), reserved(t0+200, 70)}, {used(t0, 100)}},
			emitted: []int{0, 1}, wantTs: []int64{t0}, wantResv: []int64{60},
		},
		{
			name:    "equal distance: the earlier reserved wins",
			batches: [][]gaugePoint{{reserved(t0+30, 60), reserved(t0-30, 40)}, {used(t0, 100)}},
			emitted: []int{0, 1}, wantTs: []int64{t0}, wantResv: []int64{40},
		},
		{
			name:    "samples of one batch come out in time order",
			batches: [][]gaugePoint{{used(t0+100, 2), used(t0, 1), reserved(t0, 50)}},
			emitted: []int{2}, wantTs: []int64{t0, t0 + 100}, wantResv: []int64{50, 50},
		},
		{
			name:    "a resent batch forms no second sample",
			batches: [][]gaugePoint{{used(t0, 1), reserved(t0, 50)}, {used(t0, 1), reserved(t0, 50)}},
			emitted: []int{1, 0}, wantTs: []int64{t0}, wantResv: []int64{50},
			skips: []SkipReason{SkipDuplicate, SkipDuplicate},
		},
		{
			name: "a resent batch older than the tolerance forms no second sample",
			batches: [][]gaugePoint{
				{used(t0, 1), reserved(t0, 50), used(t0+4*tol, 2), reserved(t0+4*tol, 51)},
				{used(t0, 1), reserved(t0, 50), used(t0+4*tol, 2), reserved(t0+4*tol, 51)},
			},
			emitted: []int{2, 0}, wantTs: []int64{t0, t0 + 4*tol}, wantResv: []int64{50, 51},
			// the resent device-used point at t0 is too old to join; the
			// points at t0+4*tol are duplicates of points still buffered;
			// the resent reserved point at t0 finds its row gone and leaves
			// again with no device-used partner
			skips: []SkipReason{SkipUnjoinable, SkipDuplicate, SkipDuplicate, SkipOrphaned},
		},
		{
			name:    "the first point of a time wins",
			batches: [][]gaugePoint{{reserved(t0, 50), reserved(t0, 70)}, {used(t0, 1)}},
			emitted: []int{0, 1}, wantTs: []int64{t0}, wantResv: []int64{50},
			skips: []SkipReason{SkipDuplicate},
		},
		{
			name:    "allocator points without device-used points are orphaned as they leave",
			batches: [][]gaugePoint{{reserved(t0, 50)}, {reserved(t0+2*tol, 51), used(t0+2*tol, 1)}},
			emitted: []int{0, 1}, wantTs: []int64{t0 + 2*tol}, wantResv: []int64{51},
			skips: []SkipReason{SkipOrphaned},
		},
		{
			name: "a device-used point older than the newest by more than the tolerance is refused",
			batches: [][]gaugePoint{
				{reserved(t0, 40), used(t0, 1), reserved(t0+4*tol, 50), used(t0+4*tol, 2)},
				{used(t0+1, 3)},
			},
			emitted: []int{2, 0}, wantTs: []int64{t0, t0 + 4*tol}, wantResv: []int64{40, 50},
			skips: []SkipReason{SkipUnjoinable},
		},
		{
			name:    "a used point forms one sample only",
			batches: [][]gaugePoint{{used(t0, 1), reserved(t0, 50)}, {reserved(t0+1, 51)}},
			emitted: []int{1, 0}, wantTs: []int64{t0}, wantResv: []int64{50},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestConverter(Config{})
			var all collected
			for i, b := range tt.batches {
				got := convertMetrics(t, c, gaugeBatch(rank0, b...))
				assert.Len(t, got.records, tt.emitted[i], "batch %d", i)
				all.records = append(all.records, got.records...)
				all.skips = append(all.skips, got.skips...)
			}
			var ts, resv []int64
			for _, r := range all.records {
				ts = append(ts, r.TimestampNs)
				resv = append(resv, r.Event.AllocatorReservedBytes.Value)
			}
			assert.Equal(t, tt.wantTs, ts)
			assert.Equal(t, tt.wantResv, resv)
			assert.Equal(t, tt.skips, all.reasons())
		})
	}
}

func TestConvertMetricsPendingExpiry(t *testing.T) {
	const t0 = int64(1767225600000000000)
	c, clk := newTestConverter(Config{PendingTTL: 10 * time.Second})
	got := convertMetrics(t, c, gaugeBatch(rank0, used(t0, 1), used(t0+100, 2)))
	assert.Empty(t, got.records)
	assert.Equal(t, 2, c.Stats().PendingPoints)
	clk.advance(10 * time.Second)
	assert.Equal(t, 0, c.Expire(), "not older than the TTL yet")
	clk.advance(time.Nanosecond)
	assert.Equal(t, 2, c.Expire())
	st := c.Stats()
	assert.Equal(t, 0, st.PendingPoints)
	assert.Equal(t, 0, st.Series, "empty join buffers are forgotten")
	assert.Equal(t, uint64(2), st.UnjoinedPoints)
}

func TestConvertMetricsPendingBound(t *testing.T) {
	const t0 = int64(1767225600000000000)
	c, _ := newTestConverter(Config{MaxPendingRows: 4})
	var pts []gaugePoint
	for i := range 6 {
		pts = append(pts, used(t0+int64(i), int64(i)))
	}
	got := convertMetrics(t, c, gaugeBatch(rank0, pts...))
	assert.Equal(t, []SkipReason{SkipUnjoinable, SkipUnjoinable}, got.reasons())
	assert.Equal(t, 4, c.Stats().PendingPoints)
	// The four newest are still there and join a reserved point of the
	// newest one's time (a reserved point older than them all would need a
	// fifth row and push the oldest out).
	got = convertMetrics(t, c, gaugeBatch(rank0, reserved(t0+5, 9)))
	require.Len(t, got.records, 4)
	assert.Equal(t, int64(2), got.records[0].Event.DeviceUsedBytes.Value)
}

func TestConvertMetricsSeriesBound(t *testing.T) {
	const t0 = int64(1767225600000000000)
	c, _ := newTestConverter(Config{MaxSeries: 2})
	var all collected
	for r := range int64(3) {
		got := convertMetrics(t, c, gaugeBatch(map[string]any{"rank": r}, used(t0, 1)))
		all.skips = append(all.skips, got.skips...)
	}
	assert.Equal(t, []SkipReason{SkipOverLimit}, all.reasons())
	assert.Equal(t, 2, c.Stats().Series)
}

func TestConvertMetricsMiBUnitAndDeltaSum(t *testing.T) {
	const t0 = int64(1767225600000000000)
	c, _ := newTestConverter(Config{})
	md := gaugeBatch(rank0, reserved(t0, 1))
	m := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().AppendEmpty()
	m.SetName("gpu.memory.device.used")
	m.SetUnit("MiBy")
	dp := m.SetEmptySum().DataPoints().AppendEmpty()
	m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp.SetTimestamp(pcommon.Timestamp(t0))
	dp.SetDoubleValue(1.5)
	d := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().AppendEmpty()
	d.SetName("gpu.memory.device.used")
	d.SetEmptySum().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	d.Sum().DataPoints().AppendEmpty().SetIntValue(5)
	st := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().AppendEmpty()
	st.SetName("gpu.memory.device.used")
	sdp := st.SetEmptyGauge().DataPoints().AppendEmpty()
	sdp.SetTimestamp(pcommon.Timestamp(t0 + 5))
	sdp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))

	got := convertMetrics(t, c, md)
	require.Len(t, got.records, 1)
	assert.Equal(t, int64(3*mibBytes/2), got.records[0].Event.DeviceUsedBytes.Value)
	assert.Equal(t, []SkipReason{SkipInvalidValue}, got.reasons(), "the delta sum; the stale marker is no skip")
}

func TestConvertMetricsInconsistentTotal(t *testing.T) {
	const t0 = int64(1767225600000000000)
	c, _ := newTestConverter(Config{})
	got := convertMetrics(t, c, gaugeBatch(rank0, used(t0, 10), reserved(t0, 5),
		gaugePoint{name: "gpu.memory.device.total", ts: t0, value: 9}))
	assert.Empty(t, got.records)
	assert.Equal(t, []SkipReason{SkipInvalidValue}, got.reasons())
}

func TestConvertMetricsJobsAreSeparate(t *testing.T) {
	const t0 = int64(1767225600000000000)
	c, _ := newTestConverter(Config{})
	got := convertMetrics(t, c, gaugeBatch(map[string]any{"job_id": "a", "rank": 0}, used(t0, 10)))
	assert.Empty(t, got.records)
	got = convertMetrics(t, c, gaugeBatch(map[string]any{"job_id": "b", "rank": 0}, reserved(t0, 5)))
	assert.Empty(t, got.records, "job b's reserved must not join job a's used point")
	got = convertMetrics(t, c, gaugeBatch(map[string]any{"rank": 0}, reserved(t0, 5)))
	assert.Empty(t, got.records, "no job id is the job \"\", not a wildcard")
}

// TestConvertMetricsEachResourceKeepsItsRank: when a resource's first point
// is rejected before its identity is resolved (a staleness marker, a
// negative value), the resource's next points still go to its own rank, not
// to the previous resource's.
func TestConvertMetricsEachResourceKeepsItsRank(t *testing.T) {
	const t0 = int64(1767225600000000000)
	for _, first := range []struct {
		name string
		set  func(pmetric.NumberDataPoint)
	}{
		{"staleness marker", func(dp pmetric.NumberDataPoint) {
			dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
		}},
		{"negative value", func(dp pmetric.NumberDataPoint) { dp.SetIntValue(-1) }},
	} {
		t.Run(first.name, func(t *testing.T) {
			c, _ := newTestConverter(Config{})
			md := gaugeBatch(rank0, used(t0, 10), reserved(t0, 5))
			rank1 := gaugeBatch(map[string]any{"training.job.id": "j", "training.rank": int64(1)},
				used(t0, 0), used(t0+1, 20), reserved(t0+1, 6))
			first.set(rank1.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0))
			rank1.ResourceMetrics().At(0).CopyTo(md.ResourceMetrics().AppendEmpty())
			got := convertMetrics(t, c, md)
			require.Len(t, got.records, 2)
			assert.Equal(t, int64(0), got.records[0].Rank)
			assert.Equal(t, int64(1), got.records[1].Rank)
			assert.Equal(t, int64(20), got.records[1].Event.DeviceUsedBytes.Value)
		})
	}
}

// TestConvertMetricsSamplesAfterALatePoint: a resource whose first
// device-used point is refused as late still forms the samples of its next
// points in the same call.
func TestConvertMetricsSamplesAfterALatePoint(t *testing.T) {
	const t0 = int64(1767225600000000000)
	tol := int64(250 * time.Millisecond)
	c, _ := newTestConverter(Config{})
	got := convertMetrics(t, c, gaugeBatch(rank0, used(t0+4*tol, 1), reserved(t0+4*tol, 5)))
	require.Len(t, got.records, 1)
	got = convertMetrics(t, c, gaugeBatch(rank0, used(t0, 2), used(t0+5*tol, 3), reserved(t0+5*tol, 6)))
	assert.Equal(t, []SkipReason{SkipUnjoinable}, got.reasons(), "the late point")
	require.Len(t, got.records, 1)
	assert.Equal(t, int64(3), got.records[0].Event.DeviceUsedBytes.Value)
}

// TestConvertMetricsValueRange checks the byte range at its edges for both
// units: an integer point goes through a fast path that must agree with
// pointBytes.
func TestConvertMetricsValueRange(t *testing.T) {
	const ts = 1767225600000000000
	tests := []struct {
		name   string
		metric string // device-used metric: bytes or MiB
		value  int64
		want   int64 // bytes; -1: skipped as invalid_value
	}{
		{name: "zero bytes", metric: "gpu.memory.device.used", value: 0, want: 0},
		{name: "largest bytes", metric: "gpu.memory.device.used", value: maxBytes, want: maxBytes},
		{name: "bytes past the range", metric: "gpu.memory.device.used", value: maxBytes + 1, want: -1},
		{name: "negative bytes", metric: "gpu.memory.device.used", value: -1, want: -1},
		{name: "most negative bytes", metric: "gpu.memory.device.used", value: math.MinInt64, want: -1},
		{name: "largest MiB", metric: "DCGM_FI_DEV_FB_USED", value: maxBytes / mib, want: maxBytes},
		{name: "MiB past the range", metric: "DCGM_FI_DEV_FB_USED", value: maxBytes/mib + 1, want: -1},
		{name: "negative MiB", metric: "DCGM_FI_DEV_FB_USED", value: -1, want: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Metrics: DefaultMetricNames()}
			cfg.Metrics.DeviceUsed = append(cfg.Metrics.DeviceUsed, "DCGM_FI_DEV_FB_USED")
			c, _ := newTestConverter(cfg)
			// The device's total is reported: without it, a value past
			// maxDeviceBytes is refused whatever its range.
			got := convertMetrics(t, c, gaugeBatch(rank0,
				gaugePoint{name: tt.metric, ts: ts, value: tt.value},
				reserved(ts, 0), gaugePoint{name: "gpu.memory.device.total", ts: ts, value: maxBytes}))
			if tt.want < 0 {
				assert.Empty(t, got.records)
				assert.Equal(t, []SkipReason{SkipInvalidValue}, got.reasons())
				return
			}
			require.Len(t, got.records, 1)
			assert.Empty(t, got.skips)
			assert.Equal(t, telemetry.Int(tt.want), got.records[0].Event.DeviceUsedBytes)
		})
	}
}

// TestConvertMetricsAttributeMemo checks that remembering the previous
// point's identity outcome changes nothing: the same batch converted with
// a distinct extra attribute on every point (so that no point repeats the
// previous one's attributes) gives the same records and skips. The batch
// has runs of one GPU, GPUs interleaved, a label of another type, an
// unjoinable GPU, points that carry their own rank, and a second host whose
// points have exactly the first host's labels (their host is on the
// resource), which must not reuse the first host's outcome.
func TestConvertMetricsAttributeMemo(t *testing.T) {
	const t0 = int64(1767225600000000000)
	build := func(distinct bool) pmetric.Metrics {
		md := pmetric.NewMetrics()
		seq := 0
		gauge := func(rm pmetric.ResourceMetrics, name string, pts ...map[string]any) {
			m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
			m.SetName(name)
			dps := m.SetEmptyGauge().DataPoints()
			for i, attrs := range pts {
				dp := dps.AppendEmpty()
				dp.SetTimestamp(pcommon.Timestamp(t0 + int64(i%4)*100e6))
				dp.SetDoubleValue(1000 + float64(i))
				_ = dp.Attributes().FromRaw(attrs)
				if distinct {
					dp.Attributes().PutInt("seq", int64(seq))
				}
				seq++
			}
		}
		for rank := range int64(2) {
			rm := md.ResourceMetrics().AppendEmpty()
			_ = rm.Resource().Attributes().FromRaw(map[string]any{
				"training.job.id": "j", "training.rank": rank, "training.world_size": int64(8),
				"host.name": "node-a", "gpu.index": rank,
			})
			gauge(rm, "gpu.memory.allocator.reserved", nil, nil, nil, nil)
		}
		gpu := func(g any) map[string]any { return map[string]any{"gpu": g, "modelName": "H100"} }
		own := map[string]any{"gpu": "3", "training.rank": "2", "training.job.id": "k", "training.world_size": int64(4)}
		for _, host := range []string{"node-a", "node-b"} {
			rm := md.ResourceMetrics().AppendEmpty()
			rm.Resource().Attributes().PutStr("Hostname", host)
			gauge(rm, "DCGM_FI_DEV_FB_USED",
				gpu("0"), gpu("0"), gpu("0"), gpu("0"), gpu("1"), gpu("0"), gpu("1"), gpu("1"),
				gpu(int64(1)), gpu(int64(1)), gpu("7"), gpu("7"), own, own, gpu("0"), gpu("0"))
			// A point without labels resolves the resource's identity in
			// between (no rank: skipped); the next point repeats the labels
			// of the point before it.
			gauge(rm, "DCGM_FI_DEV_FB_RESERVED", nil)
			// ends with the labels node-b's first point has
			gauge(rm, "DCGM_FI_DEV_FB_FREE", gpu("0"), gpu("1"), gpu("1"), gpu("0"))
		}
		return md
	}
	run := func(distinct bool) (collected, uint64) {
		c, _ := newTestConverter(Config{})
		before := c.ids.idGen
		got := convertMetrics(t, c, build(distinct))
		return got, c.ids.idGen - before
	}
	memo, memoResolves := run(false)
	plain, plainResolves := run(true)
	require.NotEmpty(t, memo.records)
	assert.Equal(t, plain.records, memo.records)
	assert.Equal(t, plain.skips, memo.skips)
	assert.Less(t, memoResolves, plainResolves, "repeated labels are not resolved again")
	// node-b has no rank mapping: its points are unjoinable although their
	// labels equal node-a's.
	for _, r := range memo.records {
		assert.NotEqual(t, "node-b", r.Host)
	}
	assert.Contains(t, memo.reasons(), SkipUnjoinable)
	assert.Contains(t, memo.reasons(), SkipNoIdentity)
}

// TestConvertMetricsAbsurdDeviceUsedIsInvalid: a device-used value no
// device holds (1 PiB) is an invalid value when the device's total is
// unknown, as one above the total is when it is known (issue 32).
func TestConvertMetricsAbsurdDeviceUsedIsInvalid(t *testing.T) {
	const t0 = int64(1767225600000000000)
	c, _ := newTestConverter(Config{})
	got := convertMetrics(t, c, gaugeBatch(map[string]any{"job_id": "j", "rank": 0}, used(t0, 1<<50), reserved(t0, 1<<30)))
	assert.Empty(t, got.records)
	assert.Equal(t, []SkipReason{SkipInvalidValue}, got.reasons())
	got = convertMetrics(t, c, gaugeBatch(map[string]any{"job_id": "j", "rank": 0}, used(t0+1, maxDeviceBytes), reserved(t0+1, 1<<30)))
	assert.Len(t, got.records, 1, "the bound itself is a sample")
}
