package ingest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claim is a rank's own telemetry naming a device.
type claim struct {
	job       string
	rank      int64
	index     int64  // -1: none
	uuid      string // "": none
	instance  int64  // -1: none
	atSeconds int64
}

// devicePoint is a device-level point (DCGM, NVML): no rank.
type devicePoint struct {
	index    int64
	uuid     string
	instance int64
}

// joined is what a device point became: a rank of a job, or a skip.
type joined struct {
	job    string
	rank   int64
	reason SkipReason
}

func joinedRank(job string, rank int64) joined { return joined{job: job, rank: rank} }
func skipped(r SkipReason) joined              { return joined{rank: -1, reason: r} }

// TestDeviceMapLayouts: a device point joins the rank that owns its GPU
// (by UUID first, by host and index only when one live rank claims it
// and reported no other UUID), or is skipped with the reason of its
// layout (docs/gpu-metrics-join.md); never a wrong rank.
func TestDeviceMapLayouts(t *testing.T) {
	const ttl = int64(600e9)
	gpu := func(i int) string { return fmt.Sprintf("GPU-%d", i) }
	containersWithUUIDs := []claim{
		{"j", 0, 0, gpu(0), -1, 0}, {"j", 1, 0, gpu(1), -1, 0},
		{"j", 2, 0, gpu(2), -1, 0}, {"j", 3, 0, gpu(3), -1, 0},
	}
	containersNoUUIDs := []claim{
		{"j", 0, 0, "", -1, 0}, {"j", 1, 0, "", -1, 0},
		{"j", 2, 0, "", -1, 0}, {"j", 3, 0, "", -1, 0},
	}
	tests := []struct {
		name   string
		claims []claim
		at     int64
		points []devicePoint
		want   []joined
	}{
		{
			name:   "bare metal: host indexes, DCGM with UUIDs",
			claims: []claim{{"j", 0, 0, "", -1, 0}, {"j", 1, 1, "", -1, 0}},
			points: []devicePoint{{0, gpu(0), -1}, {1, gpu(1), -1}, {2, gpu(2), -1}},
			want:   []joined{joinedRank("j", 0), joinedRank("j", 1), skipped(SkipUnjoinable)},
		},
		{
			name:   "containers with UUIDs: every rank reports index 0",
			claims: containersWithUUIDs,
			points: []devicePoint{{0, gpu(0), -1}, {1, gpu(1), -1}, {2, gpu(2), -1}, {3, gpu(3), -1}},
			want:   []joined{joinedRank("j", 0), joinedRank("j", 1), joinedRank("j", 2), joinedRank("j", 3)},
		},
		{
			name:   "containers with UUIDs, DCGM started with --use-old-namespace or no index",
			claims: containersWithUUIDs,
			points: []devicePoint{{-1, gpu(2), -1}},
			want:   []joined{joinedRank("j", 2)},
		},
		{
			name:   "containers without UUIDs: index 0 is claimed four times",
			claims: containersNoUUIDs,
			points: []devicePoint{{0, gpu(0), -1}, {1, gpu(1), -1}, {3, gpu(3), -1}, {0, "", -1}},
			want:   []joined{skipped(SkipAmbiguousDevice), skipped(SkipUnjoinable), skipped(SkipUnjoinable), skipped(SkipAmbiguousDevice)},
		},
		{
			name:   "one rank in a container on GPU 3 reports index 0 with its UUID",
			claims: []claim{{"j", 7, 0, gpu(3), -1, 0}},
			points: []devicePoint{{0, gpu(0), -1}, {3, gpu(3), -1}},
			want:   []joined{skipped(SkipUnjoinable), joinedRank("j", 7)},
		},
		{
			name:   "GPU shared by two ranks of one job (MPS, time-slicing)",
			claims: []claim{{"j", 0, 0, gpu(0), -1, 0}, {"j", 1, 0, gpu(0), -1, 0}},
			points: []devicePoint{{0, gpu(0), -1}},
			want:   []joined{skipped(SkipSharedDevice)},
		},
		{
			name:   "GPU shared by two jobs",
			claims: []claim{{"a", 0, 2, gpu(2), -1, 0}, {"b", 0, 2, gpu(2), -1, 0}},
			points: []devicePoint{{2, gpu(2), -1}},
			want:   []joined{skipped(SkipSharedDevice)},
		},
		{
			name:   "the next job on a GPU takes it over once the first went silent",
			claims: []claim{{"a", 0, 2, gpu(2), -1, 0}, {"b", 5, 2, gpu(2), -1, 30}},
			at:     31,
			points: []devicePoint{{2, gpu(2), -1}, {2, "", -1}},
			want:   []joined{joinedRank("b", 5), joinedRank("b", 5)},
		},
		{
			name: "MIG: each instance joins the rank that owns it",
			claims: []claim{
				{"j", 0, 0, gpu(9), 1, 0}, {"j", 1, 0, gpu(9), 2, 0},
			},
			points: []devicePoint{{4, gpu(9), 1}, {4, gpu(9), 2}, {4, gpu(9), 3}, {4, gpu(9), -1}, {4, "", 1}},
			want: []joined{
				joinedRank("j", 0), joinedRank("j", 1), skipped(SkipUnjoinable),
				skipped(SkipMIGUnmapped), skipped(SkipMIGUnmapped),
			},
		},
		{
			name:   "MIG instance shared by two ranks",
			claims: []claim{{"j", 0, -1, gpu(9), 1, 0}, {"j", 1, -1, gpu(9), 1, 0}},
			points: []devicePoint{{4, gpu(9), 1}},
			want:   []joined{skipped(SkipSharedDevice)},
		},
		{
			name:   "MIG parent without an instance mapping",
			claims: []claim{{"j", 0, 0, gpu(9), -1, 0}},
			points: []devicePoint{{0, gpu(9), 1}, {0, gpu(9), 2}},
			want:   []joined{skipped(SkipMIGUnmapped), skipped(SkipMIGUnmapped)},
		},
		{
			name:   "a claim past identity_ttl is gone",
			claims: []claim{{"j", 0, 0, gpu(0), -1, 0}},
			at:     601,
			points: []devicePoint{{0, gpu(0), -1}},
			want:   []joined{skipped(SkipUnjoinable)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := newInterner(64)
			d := newDeviceMap(ttl, 64)
			for _, c := range tt.claims {
				id := identity{job: c.job, hasJob: true, rank: c.rank, hasRank: true, host: "node-a",
					devIndex: c.index, devOpaque: c.uuid, migInstance: c.instance}
				d.learn(in, &id, c.atSeconds*1e9)
			}
			require.Len(t, tt.want, len(tt.points))
			for i, p := range tt.points {
				id := identity{host: "node-a", devIndex: p.index, devOpaque: p.uuid, migInstance: p.instance}
				reason, detail := d.join(&id, tt.at*1e9)
				got := joined{rank: -1, reason: reason}
				if reason == "" {
					got = joinedRank(id.job, id.rank)
					assert.True(t, id.viaDevice)
				} else {
					assert.NotEmpty(t, detail)
					assert.False(t, id.hasRank, "a refused join leaves the point without a rank")
				}
				assert.Equal(t, tt.want[i], got, "point %d %+v", i, p)
			}
		})
	}
}

// TestDeviceMapOtherHostNeverJoins: the same GPU UUID or index on another
// host is another GPU.
func TestDeviceMapOtherHostNeverJoins(t *testing.T) {
	in := newInterner(16)
	d := newDeviceMap(int64(60e9), 16)
	id := identity{job: "j", hasJob: true, rank: 0, hasRank: true, host: "node-a", devIndex: 0, devOpaque: "GPU-0", migInstance: -1}
	d.learn(in, &id, 0)
	for _, p := range []identity{
		{host: "node-b", devIndex: 0, devOpaque: "GPU-0", migInstance: -1},
		{host: "node-b", devIndex: 0, migInstance: -1},
	} {
		reason, _ := d.join(&p, 1)
		assert.Equal(t, SkipUnjoinable, reason)
	}
}

// TestDeviceMapClaimantsAreBounded: a device remembers a few claimants;
// the oldest is replaced, and the device stays shared.
func TestDeviceMapClaimantsAreBounded(t *testing.T) {
	in := newInterner(16)
	d := newDeviceMap(int64(600e9), 16)
	for r := range int64(10) {
		id := identity{job: "j", hasJob: true, rank: r, hasRank: true, host: "h", devIndex: -1, devOpaque: "GPU-0", migInstance: -1}
		d.learn(in, &id, r)
	}
	c := d.m[deviceRef{host: "h", index: -1, uuid: "GPU-0", instance: -1}]
	require.NotNil(t, c)
	assert.Len(t, c.ranks, maxClaimants)
	p := identity{host: "h", devIndex: -1, devOpaque: "GPU-0", migInstance: -1}
	reason, _ := d.join(&p, 10)
	assert.Equal(t, SkipSharedDevice, reason)
}

// TestConvertMetricsKubernetesDCGMLabelSets: with the default identity
// keys, ranks in pods (host.name is the pod's hostname, k8s.node.name the
// node's, gpu.index 0 and the GPU's UUID) and dcgm-exporter's label sets
// as scraped on Kubernetes (Hostname the exporter pod's name when NODE_NAME
// is unset, or lowercase hostname, or none with -n; k8s_node_name from the
// chart's relabelling; exported_* and the exporter's own pod label with
// honor_labels false) join each GPU's points to the rank owning the GPU.
func TestConvertMetricsKubernetesDCGMLabelSets(t *testing.T) {
	const ts = int64(1767225600000000000)
	uuid := func(i int) string { return fmt.Sprintf("GPU-4c226d4d-8129-a7cf-fecd-daa9018b4b4%d", i) }
	variants := []struct {
		name string
		host map[string]any // the exporter's host labels
	}{
		{"release Hostname is the exporter pod", map[string]any{"Hostname": "nvidia-dcgm-exporter-cwbcm"}},
		{"main lowercase hostname", map[string]any{"hostname": "node-a"}},
		{"-n no hostname", map[string]any{}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			c, _ := newTestConverter(Config{})
			for r := range 4 {
				res := map[string]any{
					"training.job.id": "llm", "training.rank": int64(4 + r), "training.world_size": int64(8),
					"host.name": fmt.Sprintf("llm-worker-%d", r), "k8s.pod.name": fmt.Sprintf("llm-worker-%d", r),
					"k8s.node.name": "node-a", "gpu.index": int64(0), "gpu.uuid": uuid(r),
				}
				got := convertMetrics(t, c, gaugeBatch(res, reserved(ts, int64(r+1)<<30)))
				require.Empty(t, got.skips)
			}
			var pts []gaugePoint
			for g := 3; g >= 0; g-- { // the page lists GPUs in any order
				attrs := map[string]any{
					"gpu": fmt.Sprint(g), "UUID": uuid(g), "pci_bus_id": fmt.Sprintf("00000000:%02X:00.0", 0x18+g),
					"device": fmt.Sprintf("nvidia%d", g), "modelName": "NVIDIA H100 80GB HBM3",
					"DCGM_FI_DRIVER_VERSION": "550.144.03", "k8s_node_name": "node-a",
					"exported_pod": fmt.Sprintf("llm-worker-%d", g), "exported_namespace": "ml", "exported_container": "trainer",
					"pod": "nvidia-dcgm-exporter-cwbcm", "namespace": "gpu-operator",
				}
				for k, val := range v.host {
					attrs[k] = val
				}
				pts = append(pts, gaugePoint{name: "DCGM_FI_DEV_FB_USED", ts: ts, value: int64(10000 + g), attrs: attrs})
			}
			got := convertMetrics(t, c, gaugeBatch(map[string]any{"service.name": "dcgm-exporter"}, pts...))
			require.Empty(t, got.skips)
			require.Len(t, got.records, 4)
			for _, r := range got.records {
				g := r.Rank - 4
				assert.Equal(t, "llm", r.JobID)
				assert.Equal(t, (10000+g)*mibBytes, r.Event.DeviceUsedBytes.Value, "rank %d has GPU %d's memory", r.Rank, g)
				assert.Equal(t, (g+1)<<30, r.Event.AllocatorReservedBytes.Value)
				assert.Equal(t, "node-a", r.Host)
			}
		})
	}
}
