package ingest

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func resolveRaw(t *testing.T, item, res map[string]any) (identity, string) {
	t.Helper()
	idx := newKeyIndex(DefaultIdentityKeys())
	var ri, rr rawIdentity
	im, rm := pcommon.NewMap(), pcommon.NewMap()
	assert.NoError(t, im.FromRaw(item))
	assert.NoError(t, rm.FromRaw(res))
	ri.scan(idx, im)
	rr.scan(idx, rm)
	var id identity
	detail := resolve(&ri, &rr, &id)
	return id, detail
}

func TestResolveEveryDefaultKey(t *testing.T) {
	keys := DefaultIdentityKeys()
	for _, k := range keys.JobID {
		t.Run("job/"+k, func(t *testing.T) {
			id, d := resolveRaw(t, map[string]any{k: "run-1"}, nil)
			assert.Empty(t, d)
			assert.True(t, id.hasJob)
			assert.Equal(t, "run-1", id.job)
		})
	}
	for _, k := range keys.Rank {
		t.Run("rank/"+k, func(t *testing.T) {
			id, d := resolveRaw(t, nil, map[string]any{k: int64(5)})
			assert.Empty(t, d)
			assert.True(t, id.hasRank)
			assert.Equal(t, int64(5), id.rank)
		})
	}
	for _, k := range keys.LocalRank {
		t.Run("local_rank/"+k, func(t *testing.T) {
			id, d := resolveRaw(t, map[string]any{k: "2"}, nil)
			assert.Empty(t, d)
			assert.True(t, id.hasLocal)
			assert.Equal(t, int64(2), id.localRank)
		})
	}
	for _, k := range keys.WorldSize {
		t.Run("world_size/"+k, func(t *testing.T) {
			id, d := resolveRaw(t, map[string]any{k: 8.0}, nil)
			assert.Empty(t, d)
			assert.Equal(t, int64(8), id.worldSize)
		})
	}
	for _, k := range keys.Host {
		t.Run("host/"+k, func(t *testing.T) {
			id, d := resolveRaw(t, nil, map[string]any{k: "node-9"})
			assert.Empty(t, d)
			assert.Equal(t, "node-9", id.host)
		})
	}
	for _, k := range []string{"gpu.index", "device_id", "gpu"} {
		t.Run("device/"+k, func(t *testing.T) {
			id, d := resolveRaw(t, map[string]any{k: "7"}, nil)
			assert.Empty(t, d)
			assert.Equal(t, int64(7), id.devIndex)
			assert.Empty(t, id.devOpaque)
		})
	}
	for _, k := range []string{"gpu.uuid", "UUID"} {
		t.Run("device/"+k, func(t *testing.T) {
			id, d := resolveRaw(t, map[string]any{k: "GPU-abc"}, nil)
			assert.Empty(t, d)
			assert.Equal(t, int64(-1), id.devIndex)
			assert.Equal(t, "GPU-abc", id.devOpaque)
		})
	}
}

func TestResolvePrecedenceAndForms(t *testing.T) {
	tests := []struct {
		name      string
		item, res map[string]any
		detail    string // "" = valid
		job       string
		hasJob    bool
		rank      int64
		hasRank   bool
		world     int64
		devIndex  int64
		devOpaque string
	}{
		{name: "nothing", devIndex: -1},
		{name: "item attribute beats resource", item: map[string]any{"rank": int64(1)}, res: map[string]any{"training.rank": int64(2)}, rank: 1, hasRank: true, devIndex: -1},
		{name: "first listed key wins within a map", item: map[string]any{"SLURM_PROCID": "4", "training.rank": int64(3)}, rank: 3, hasRank: true, devIndex: -1},
		{name: "resource used when item lacks field", item: map[string]any{"job_id": "j"}, res: map[string]any{"RANK": "6", "job_id": "other"}, job: "j", hasJob: true, rank: 6, hasRank: true, devIndex: -1},
		{name: "rank as integral double", item: map[string]any{"rank": 3.0}, rank: 3, hasRank: true, devIndex: -1},
		{name: "rank as decimal string with spaces", item: map[string]any{"rank": " 12 "}, rank: 12, hasRank: true, devIndex: -1},
		{name: "numeric job id", res: map[string]any{"SLURM_JOB_ID": int64(4242)}, job: "4242", hasJob: true, devIndex: -1},
		{name: "empty job string is absent", item: map[string]any{"training.job.id": " "}, res: map[string]any{"job_id": "r"}, job: "r", hasJob: true, devIndex: -1},
		{name: "index and uuid both kept", item: map[string]any{"gpu": "0", "UUID": "GPU-x"}, devIndex: 0, devOpaque: "GPU-x"},
		{name: "non-numeric device index is opaque", item: map[string]any{"device_id": "cuda:1"}, devIndex: -1, devOpaque: "cuda:1"},
		{name: "rank below world size", item: map[string]any{"rank": int64(7), "world_size": int64(8)}, rank: 7, hasRank: true, world: 8, devIndex: -1},

		{name: "fractional rank", item: map[string]any{"rank": 1.5}, detail: "rank is not a non-negative integer"},
		{name: "negative rank", item: map[string]any{"rank": int64(-1)}, detail: "rank is not a non-negative integer"},
		{name: "word rank", item: map[string]any{"rank": "zero"}, detail: "rank is not a non-negative integer"},
		{name: "bool rank", item: map[string]any{"rank": true}, detail: "rank is not a non-negative integer"},
		{name: "hex rank", item: map[string]any{"rank": "0x1"}, detail: "rank is not a non-negative integer"},
		{name: "bad item rank is not replaced by the resource's", item: map[string]any{"rank": "x"}, res: map[string]any{"rank": int64(1)}, detail: "rank is not a non-negative integer"},
		{name: "world size zero", item: map[string]any{"world_size": int64(0)}, detail: "world size is not a positive integer"},
		{name: "rank equals world size", item: map[string]any{"rank": int64(8)}, res: map[string]any{"WORLD_SIZE": "8"}, detail: "rank is not below world size"},
		{name: "local rank too large", item: map[string]any{"rank": int64(0), "local_rank": int64(2), "world_size": int64(2)}, detail: "local rank is not below world size"},
		{name: "job of the wrong type", item: map[string]any{"job_id": []any{"a"}}, detail: "job id is not a string or integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, detail := resolveRaw(t, tt.item, tt.res)
			assert.Equal(t, tt.detail, detail)
			if tt.detail != "" {
				return
			}
			assert.Equal(t, tt.job, id.job)
			assert.Equal(t, tt.hasJob, id.hasJob)
			assert.Equal(t, tt.rank, id.rank)
			assert.Equal(t, tt.hasRank, id.hasRank)
			assert.Equal(t, tt.world, id.worldSize)
			assert.Equal(t, tt.devIndex, id.devIndex)
			assert.Equal(t, tt.devOpaque, id.devOpaque)
		})
	}
}

func TestDeviceMapJoinsByUUIDWhenIndexUnknown(t *testing.T) {
	in := newInterner(16)
	d := newDeviceMap(int64(60e9), 16)
	learned := identity{job: "j", hasJob: true, rank: 2, hasRank: true, host: "h", devIndex: -1, devOpaque: "GPU-u", migInstance: -1}
	d.learn(in, &learned, 0)
	dcgm := identity{host: "h", devIndex: 0, devOpaque: "GPU-u", migInstance: -1}
	reason, _ := d.join(&dcgm, 1)
	assert.Empty(t, reason)
	assert.Equal(t, int64(2), dcgm.rank)
	other := identity{host: "h2", devIndex: 0, devOpaque: "GPU-u", migInstance: -1}
	reason, _ = d.join(&other, 1)
	assert.NotEmpty(t, reason, "same device id on another host")
}

func TestDeviceMapBound(t *testing.T) {
	in := newInterner(16)
	d := newDeviceMap(int64(60e9), 1)
	a := identity{rank: 0, hasRank: true, host: "h", devIndex: 0, migInstance: -1}
	b := identity{rank: 1, hasRank: true, host: "h", devIndex: 1, migInstance: -1}
	d.learn(in, &a, 0)
	d.learn(in, &b, 0)
	assert.Len(t, d.m, 1)
	assert.Equal(t, uint64(1), d.full)
	// A known device still takes a new claimant: the bound counts devices.
	a.rank = 5
	d.learn(in, &a, 0)
	q := identity{host: "h", devIndex: 0, migInstance: -1}
	reason, _ := d.join(&q, 0)
	assert.Equal(t, SkipAmbiguousDevice, reason, "ranks 0 and 5 both claim (h, 0)")
}

// TestDeviceMapJoinCacheSeesNewClaims: a join outcome remembered for a
// device is not reused once a claim changed, even at the same instant.
func TestDeviceMapJoinCacheSeesNewClaims(t *testing.T) {
	in := newInterner(16)
	d := newDeviceMap(int64(60e9), 16)
	first := identity{job: "j", rank: 1, hasRank: true, host: "h", devIndex: -1, devOpaque: "GPU-u", migInstance: -1}
	d.learn(in, &first, 5)
	q := identity{host: "h", devIndex: 0, devOpaque: "GPU-u", migInstance: -1}
	reason, _ := d.join(&q, 5)
	require.Empty(t, reason)
	assert.Equal(t, int64(1), q.rank)
	second := identity{job: "j", rank: 2, hasRank: true, host: "h", devIndex: -1, devOpaque: "GPU-u", migInstance: -1}
	d.learn(in, &second, 5)
	q = identity{host: "h", devIndex: 0, devOpaque: "GPU-u", migInstance: -1}
	reason, _ = d.join(&q, 5)
	assert.Equal(t, SkipSharedDevice, reason, "the second claim learned in the same call counts")
	assert.False(t, q.hasRank)
}

// TestDeviceMapJoin covers who may use a mapping and when it expires: an
// identity with a job id joins only its own job's mapping; joins never
// refresh a mapping, only its owner's learn does.
func TestDeviceMapJoin(t *testing.T) {
	const ttl = int64(60e9)
	owner := identity{job: "a", hasJob: true, rank: 3, hasRank: true, host: "h", devIndex: 3, migInstance: -1}
	tests := []struct {
		name     string
		learnAt  []int64 // the owner's own items
		joinAt   []int64 // earlier joins of a point without a job id
		probe    identity
		probeAt  int64
		wantJoin bool
	}{
		{name: "no job id", learnAt: []int64{0}, probe: identity{host: "h", devIndex: 3}, probeAt: 1, wantJoin: true},
		{name: "same job id", learnAt: []int64{0}, probe: identity{job: "a", hasJob: true, host: "h", devIndex: 3}, probeAt: 1, wantJoin: true},
		{name: "other job id", learnAt: []int64{0}, probe: identity{job: "b", hasJob: true, host: "h", devIndex: 3}, probeAt: 1},
		{name: "other job id by uuid", learnAt: []int64{0}, probe: identity{job: "b", hasJob: true, host: "h", devIndex: -1, devOpaque: "GPU-u"}, probeAt: 1},
		{name: "within ttl of the owner", learnAt: []int64{0, 50e9}, probe: identity{host: "h", devIndex: 3}, probeAt: 100e9, wantJoin: true},
		{name: "past ttl of the owner", learnAt: []int64{0}, probe: identity{host: "h", devIndex: 3}, probeAt: ttl + 1},
		{name: "joins do not refresh", learnAt: []int64{0}, joinAt: []int64{30e9, 59e9}, probe: identity{host: "h", devIndex: 3}, probeAt: ttl + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := newInterner(16)
			d := newDeviceMap(ttl, 16)
			for _, at := range tt.learnAt {
				o := owner
				o.devOpaque = "GPU-u"
				d.learn(in, &o, at)
			}
			for _, at := range tt.joinAt {
				q := identity{host: "h", devIndex: 3, migInstance: -1}
				reason, _ := d.join(&q, at)
				require.Empty(t, reason)
			}
			probe := tt.probe
			wantJob := probe.job
			probe.migInstance = -1
			reason, _ := d.join(&probe, tt.probeAt)
			got := reason == ""
			assert.Equal(t, tt.wantJoin, got)
			if got {
				assert.Equal(t, "a", probe.job)
				assert.Equal(t, int64(3), probe.rank)
			} else {
				assert.Equal(t, wantJob, probe.job, "a refused join leaves the identity as it was")
				assert.False(t, probe.hasRank)
			}
			d.expire(tt.probeAt)
			if tt.probeAt-slices.Max(tt.learnAt) > ttl {
				assert.Empty(t, d.m, "expired identity_ttl after the owner's last item")
			}
		})
	}
}

// TestKeyIndexMatchesAMap checks the key table against a plain map of the
// same keys' slots: every configured key (colliding ones included: same
// length and same first, middle and last bytes) finds exactly its slots,
// and other keys, near misses included, find none.
func TestKeyIndexMatchesAMap(t *testing.T) {
	keys := DefaultIdentityKeys()
	keys.Rank = append(keys.Rank, "rXnk", "rYnk", "rank")      // collide with each other; "rank" twice
	keys.Host = append(keys.Host, "a.b.c", "a.x.c", "a.b.c.d") // a shared prefix too
	want, _ := keySlots(keys)
	require.Len(t, want["rank"], 2)
	idx := newKeyIndex(keys)
	for k, slots := range want {
		assert.Equal(t, slots, idx.lookup(k), k)
	}
	for _, k := range []string{"", "r", "rZnk", "ranK", "a.b.d", "a.b.c.", "training.rank2", "training.ranks", "host.nam", "gpu.indeX", "service.name"} {
		assert.Nil(t, idx.lookup(k), k)
	}
}

// TestHardwareSemconvDeviceJoinsByHwID: with hw.id appended to the device
// keys (README, Configuration), node-level hw.gpu.memory.usage points that
// name their GPU by hw.id join the rank that reported the same GPU, by
// index (a decimal string) or by UUID.
func TestHardwareSemconvDeviceJoinsByHwID(t *testing.T) {
	for _, tc := range []struct{ name, hwID string }{{"index", "3"}, {"uuid", "GPU-5f1c"}} {
		t.Run(tc.name, func(t *testing.T) {
			keys := DefaultIdentityKeys()
			keys.Device = append(keys.Device, "hw.id")
			c, _ := newTestConverter(Config{Identity: keys})
			ts := pcommon.NewTimestampFromTime(testNow.Add(-time.Second))
			gauge := func(ms pmetric.MetricSlice, name string, v int64) pmetric.NumberDataPoint {
				m := ms.AppendEmpty()
				m.SetName(name)
				m.SetUnit("By")
				dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
				dp.SetTimestamp(ts)
				dp.SetIntValue(v)
				return dp
			}
			md := pmetric.NewMetrics()
			rank := md.ResourceMetrics().AppendEmpty()
			ra := rank.Resource().Attributes()
			ra.PutStr("training.job.id", "job-hw")
			ra.PutInt("training.rank", 5)
			ra.PutStr("host.name", "node-h")
			ra.PutInt("gpu.index", 3)
			ra.PutStr("gpu.uuid", "GPU-5f1c")
			gauge(rank.ScopeMetrics().AppendEmpty().Metrics(), "gpu.memory.allocator.reserved", 10<<30)
			node := md.ResourceMetrics().AppendEmpty()
			node.Resource().Attributes().PutStr("host.name", "node-h")
			dp := gauge(node.ScopeMetrics().AppendEmpty().Metrics(), "hw.gpu.memory.usage", 12<<30)
			dp.Attributes().PutStr("hw.id", tc.hwID)
			dp.Attributes().PutStr("hw.type", "gpu")

			got := convertMetrics(t, c, md)
			require.Empty(t, got.skips)
			require.Len(t, got.records, 1)
			r := got.records[0]
			assert.Equal(t, "job-hw", r.JobID)
			assert.Equal(t, int64(5), r.Rank)
			assert.Equal(t, int64(12<<30), r.Event.DeviceUsedBytes.Value)
			assert.Equal(t, int64(10<<30), r.Event.AllocatorReservedBytes.Value)
		})
	}
}

// TestJobLimitIsCheckedBeforeAnythingIsKept (issue 16 item 5): an item of a
// job the store has no room for is skipped as over_limit before its job id
// is interned or a join buffer is made for it.
func TestJobLimitIsCheckedBeforeAnythingIsKept(t *testing.T) {
	c, _ := newTestConverter(Config{AdmitsJob: func(job string) bool { return job == "kept" }})
	ts := testNow.UnixNano()
	batch := func(job string) pmetric.Metrics {
		return gaugeBatch(map[string]any{"training.job.id": job, "training.rank": int64(0)}, used(ts, 2<<30), reserved(ts, 1<<30))
	}
	got := convertMetrics(t, c, batch("refused"))
	assert.Equal(t, []SkipReason{SkipOverLimit, SkipOverLimit}, got.reasons())
	assert.Zero(t, c.Stats().Series)
	_, interned := c.ids.names.m["refused"]
	assert.False(t, interned)
	got = convertMetrics(t, c, batch("kept"))
	assert.Empty(t, got.reasons())
	assert.Equal(t, 1, c.Stats().Series)
}
