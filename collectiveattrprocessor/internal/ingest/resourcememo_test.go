package ingest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// memoResources are resource attributes that differ from the first in one
// way each: a value, a value's type, a key, the order, one attribute more
// or less, a value that is not a scalar.
var memoResources = []map[string]any{
	{"service.name": "trainer", "training.job.id": "job-a", "training.rank": int64(1), "training.world_size": int64(4), "host.name": "n1", "gpu.index": int64(1), "process.pid": int64(100)},
	{"service.name": "trainer", "training.job.id": "job-a", "training.rank": int64(2), "training.world_size": int64(4), "host.name": "n1", "gpu.index": int64(1), "process.pid": int64(100)},
	{"service.name": "trainer", "training.job.id": "job-a", "training.rank": "2", "training.world_size": int64(4), "host.name": "n1", "gpu.index": int64(1), "process.pid": int64(100)},
	{"service.name": "trainer", "training.job.id": "job-a", "training.rank": 2.0, "training.world_size": int64(4), "host.name": "n1", "gpu.index": int64(1), "process.pid": int64(100)},
	{"service.name": "trainer", "training.job.id": "job-a", "training.rank": true, "training.world_size": int64(4), "host.name": "n1", "gpu.index": int64(1), "process.pid": int64(100)},
	{"service.name": "trainer", "training.job.id": int64(7), "training.rank": int64(1), "training.world_size": int64(4), "host.name": "n1", "gpu.index": int64(1), "process.pid": int64(100)},
	{"service.name": "trainer", "training.job.id": "job-b", "training.rank": int64(1), "training.world_size": int64(4), "host.name": "n1", "gpu.index": int64(1), "process.pid": int64(100)},
	{"service.name": "trainer", "training.job.id": "job-a", "training.rank": int64(1), "training.world_size": int64(4), "host.name": "n2", "gpu.index": int64(1), "process.pid": int64(101)},
	{"service.name": "trainer", "training.job.id": "job-a", "training.rank": int64(1), "training.world_size": int64(4), "host.name": "n1", "gpu.index": int64(1), "process.pid": int64(100), "extra": "x"},
	{"service.name": "trainer", "training.job.id": "job-a", "training.rank": int64(1), "host.name": "n1", "gpu.index": int64(1), "process.pid": int64(100)},
	{"service.name": "trainer", "training.job.id": "job-a", "training.ranx": int64(1), "training.world_size": int64(4), "host.name": "n1", "gpu.index": int64(1), "process.pid": int64(100)},
	{"service.name": "trainer", "training.job.id": "job-a", "training.rank": int64(1), "training.world_size": int64(4), "host.name": "n1", "gpu.index": "GPU-1", "process.pid": int64(100)},
	{"service.name": "trainer", "training.job.id": "job-a", "training.rank": int64(1), "training.world_size": int64(4), "host.name": "n1", "gpu.index": int64(1), "process.pid": int64(100), "labels": map[string]any{"a": "b"}},
	{"service.name": "trainer", "training.job.id": "job-a", "training.rank": int64(1), "training.world_size": int64(4), "host.name": "n1", "gpu.index": int64(1), "process.pid": int64(100), "process.creation.time": "2026-01-01T00:00:00Z"},
	{"service.name": "trainer", "training.job.id": "job-a", "training.rank": int64(9), "training.world_size": int64(4), "host.name": "n1", "gpu.index": int64(1), "process.pid": int64(100)},
}

// TestResourceMemoFollowsContent: a resource read at the position of a
// resource of the previous batch (compared with its memoised reading)
// converts as it does when that position held another resource (read
// afresh), whatever changed between the two, and teaches the Inspector
// join the same process.
func TestResourceMemoFollowsContent(t *testing.T) {
	ts := testNow.UnixNano() - int64(time.Minute)
	batch := func(res map[string]any, at int64) pmetric.Metrics {
		return gaugeBatch(res, used(at, 2<<30), reserved(at, 1<<30))
	}
	// behind puts a resource without identity before md's.
	behind := func(md pmetric.Metrics) pmetric.Metrics {
		out := pmetric.NewMetrics()
		out.ResourceMetrics().AppendEmpty().Resource().Attributes().PutStr("service.name", "other")
		md.ResourceMetrics().MoveAndAppendTo(out.ResourceMetrics())
		return out
	}
	for i, prev := range memoResources {
		for j, cur := range memoResources {
			t.Run(fmt.Sprintf("%d_then_%d", i, j), func(t *testing.T) {
				c, _ := newTestConverter(Config{})
				convertMetrics(t, c, batch(prev, ts))
				got := convertMetrics(t, c, batch(cur, ts+int64(time.Second)))
				fresh, _ := newTestConverter(Config{})
				convertMetrics(t, fresh, behind(batch(prev, ts)))
				want := convertMetrics(t, fresh, batch(cur, ts+int64(time.Second)))
				assert.Equal(t, want.records, got.records)
				assert.Equal(t, want.skips, got.skips)
				host, pid := cur["host.name"].(string), cur["process.pid"].(int64)
				wantOwner, wantErr := fresh.insp.joiner.Join(host, pid)
				gotOwner, gotErr := c.insp.joiner.Join(host, pid)
				assert.Equal(t, wantOwner, gotOwner)
				assert.Equal(t, wantErr, gotErr)
			})
		}
	}
}

// TestResourceMemoReorderedResources: resources that come in another order
// from one batch to the next (or one fewer) keep their own identity.
func TestResourceMemoReorderedResources(t *testing.T) {
	c, _ := newTestConverter(Config{})
	ts := testNow.UnixNano() - int64(time.Minute)
	build := func(order []int, at int64) pmetric.Metrics {
		md := pmetric.NewMetrics()
		for _, r := range order {
			gaugeBatch(map[string]any{"training.job.id": "job", "training.rank": int64(r), "host.name": fmt.Sprint("n", r)},
				used(at, 2<<30), reserved(at, 1<<30)).ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
		}
		return md
	}
	for round, order := range [][]int{{0, 1, 2}, {2, 0, 1}, {0, 1, 2}, {1, 2}} {
		got := convertMetrics(t, c, build(order, ts+int64(round)*int64(time.Second)))
		require.Len(t, got.records, len(order))
		for k, r := range order {
			assert.Equal(t, int64(r), got.records[k].Rank)
			assert.Equal(t, fmt.Sprint("n", r), got.records[k].Host)
		}
	}
}
