package ingest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// seriesSnapshot is everything of a series that decides later joins.
type seriesSnapshot struct {
	Rows                                []joinRow
	RoleCount                           [numRoles]int32
	Cursor, FirstPending                int
	MaxReservedTs, MaxUsedTs, HorizonNs int64
	HasReserved, HasUsed, Pruned        bool
	Host                                string
	WorldSize, LocalRank, DeviceID      int64
	HasLocal                            bool
}

func snapshot(c *Converter) map[seriesKey]seriesSnapshot {
	out := map[seriesKey]seriesSnapshot{}
	for k, s := range c.series {
		out[k] = seriesSnapshot{
			Rows: slices.Clone(s.rows), RoleCount: s.roleCount, Cursor: s.cursor, FirstPending: s.firstPending,
			MaxReservedTs: s.maxReservedTs, MaxUsedTs: s.maxUsedTs, HorizonNs: s.horizonNs,
			HasReserved: s.hasReserved, HasUsed: s.hasUsed, Pruned: s.pruned,
			Host: s.host, WorldSize: s.worldSize, LocalRank: s.localRank, DeviceID: s.deviceID, HasLocal: s.hasLocal,
		}
	}
	return out
}

// joinBatchGen makes random batches of per-rank memory metrics: mostly the
// in-process exporter's shape (one metric per role, each with the points of
// the same collections, times after the previous batch), the rest broken in
// one way (a point missing, repeated, moved or out of order, a role sent
// under two names, times reaching back into the previous batch, a second
// resource of the rank), with values now and then inconsistent.
type joinBatchGen struct {
	rng  *rand.Rand
	next [3]int64 // per rank, the time of its next collection
	// optional are the optional roles' metric names of each rank: an
	// exporter sends the same ones batch after batch, until it changes.
	optional [3][]string
}

var joinRoleNames = []string{
	"gpu.memory.device.free", "gpu.memory.device.total", "gpu.memory.allocator.allocated",
	"gpu.memory.allocator.active", "gpu.memory.allocator.inactive", "DCGM_FI_DEV_FB_RESERVED",
}

type genPoint struct {
	name  string
	ts, v int64
}

func (g *joinBatchGen) rankPoints(rank int) []genPoint {
	rng := g.rng
	step := int64(1+rng.IntN(3)) * int64(40*time.Millisecond)
	if rng.IntN(8) == 0 { // reach back into the previous batch
		g.next[rank] -= int64(rng.IntN(4)) * step
	}
	times := make([]int64, 1+rng.IntN(6))
	for i := range times {
		times[i] = g.next[rank]
		g.next[rank] += step
	}
	if g.optional[rank] == nil || rng.IntN(20) == 0 {
		g.optional[rank] = []string{}
		for _, n := range joinRoleNames {
			if rng.IntN(3) == 0 {
				g.optional[rank] = append(g.optional[rank], n)
			}
		}
	}
	names := []string{"gpu.memory.device.used", "gpu.memory.allocator.reserved"}
	if rng.IntN(12) == 0 {
		names = names[rng.IntN(2):][:1] // one of the two only
	}
	names = append(names, g.optional[rank]...)
	if rng.IntN(4) == 0 {
		rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	}
	var pts []genPoint
	for _, name := range names {
		for _, ts := range times {
			v := int64(1000 + rng.IntN(100))
			switch name {
			case "gpu.memory.device.total":
				v = int64(1090 + rng.IntN(200)) // sometimes below used
			case "DCGM_FI_DEV_FB_RESERVED":
				v = int64(rng.IntN(3))
			}
			pts = append(pts, genPoint{name, ts, v})
		}
	}
	if len(pts) > 1 {
		i, j := rng.IntN(len(pts)), rng.IntN(len(pts))
		switch rng.IntN(12) {
		case 0:
			pts = slices.Delete(pts, i, i+1)
		case 1:
			pts = slices.Insert(pts, j, pts[i])
		case 2:
			pts[i], pts[j] = pts[j], pts[i]
		case 3:
			pts[i].ts += int64(rng.IntN(3)-1) * int64(20*time.Millisecond)
		case 4:
			p := pts[i]
			p.name = "hw.gpu.memory.usage" // device used under its second name
			pts = append(pts, p)
		}
	}
	return pts
}

// batch builds the points of every rank: a resource per rank, a metric per
// run of points of one name; now and then a rank's points are split
// between two resources.
func (g *joinBatchGen) batch() pmetric.Metrics {
	md := pmetric.NewMetrics()
	for rank := range len(g.next) {
		pts := g.rankPoints(rank)
		split := len(pts)
		if g.rng.IntN(10) == 0 {
			split = g.rng.IntN(len(pts) + 1)
		}
		for _, part := range [][]genPoint{pts[:split], pts[split:]} {
			if len(part) == 0 {
				continue
			}
			rm := md.ResourceMetrics().AppendEmpty()
			_ = rm.Resource().Attributes().FromRaw(map[string]any{"training.job.id": "j", "training.rank": int64(rank), "host.name": "h", "gpu.index": int64(rank)})
			ms := rm.ScopeMetrics().AppendEmpty().Metrics()
			var dps pmetric.NumberDataPointSlice
			for i, p := range part {
				if i == 0 || part[i-1].name != p.name {
					if g.rng.IntN(4) == 0 {
						ms = rm.ScopeMetrics().AppendEmpty().Metrics() // a second scope
					}
					m := ms.AppendEmpty()
					m.SetName(p.name)
					dps = m.SetEmptyGauge().DataPoints()
				}
				dp := dps.AppendEmpty()
				dp.SetTimestamp(pcommon.Timestamp(p.ts))
				dp.SetIntValue(p.v)
			}
			if g.rng.IntN(4) == 0 {
				g.quirk(rm, rank)
			}
		}
	}
	return md
}

// quirk changes one thing of a resource's metrics that the per-point path
// takes in its stride: some a zip block takes too, the rest it must leave
// to that path.
func (g *joinBatchGen) quirk(rm pmetric.ResourceMetrics, rank int) {
	rng := g.rng
	sm := rm.ScopeMetrics().At(rng.IntN(rm.ScopeMetrics().Len()))
	if sm.Metrics().Len() == 0 {
		return
	}
	m := sm.Metrics().At(rng.IntN(sm.Metrics().Len()))
	dps := m.Gauge().DataPoints()
	dp := dps.At(rng.IntN(dps.Len()))
	switch rng.IntN(12) {
	case 0: // a double, whole or not
		dp.SetDoubleValue(float64(dp.IntValue()) + float64(rng.IntN(2))*0.4)
	case 1: // MiB
		m.SetUnit("MiB")
	case 2: // a staleness marker
		dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	case 3: // a cumulative sum, then a delta sum
		m.Gauge().DataPoints().MoveAndAppendTo(m.SetEmptySum().DataPoints())
		m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		if rng.IntN(2) == 0 {
			m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		}
	case 4: // the point names its rank itself
		dp.Attributes().PutInt("training.rank", int64(rank))
	case 5: // another rank
		dp.Attributes().PutInt("training.rank", int64((rank+1)%len(g.next)))
	case 6:
		dp.SetIntValue(-1)
	case 7:
		dp.SetTimestamp(0)
	case 8: // a histogram of the same name
		h := sm.Metrics().AppendEmpty()
		h.SetName(m.Name())
		h.SetEmptyHistogram().DataPoints().AppendEmpty().SetTimestamp(dp.Timestamp())
	case 9: // a metric of another role with no points
		e := sm.Metrics().AppendEmpty()
		e.SetName("gpu.memory.allocator.inactive")
		e.SetEmptyGauge()
	case 11: // the device names the rank: joined through the device map, or not at all
		_ = rm.Resource().Attributes().FromRaw(map[string]any{"host.name": "h", "gpu.index": int64(rank)})
	case 10: // one collection's time, in every metric: missing, repeated or in the future
		l := rng.IntN(dps.Len())
		var ts pcommon.Timestamp
		switch {
		case l > 0 && rng.IntN(3) == 0:
			ts = dps.At(l - 1).Timestamp()
		case rng.IntN(2) == 0:
			ts = pcommon.Timestamp(time.Now().Add(time.Hour).UnixNano())
		}
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Type() == pmetric.MetricTypeGauge && m.Gauge().DataPoints().Len() > l {
					m.Gauge().DataPoints().At(l).SetTimestamp(ts)
				}
			}
		}
	}
}

// TestZipJoinMatchesTheRowJoin runs the same random batches through a
// converter with the zip path and one without, and checks after every batch
// that both emitted the same samples and skips and hold the same join
// state; and that both paths were taken often.
func TestZipJoinMatchesTheRowJoin(t *testing.T) {
	const t0 = int64(1767225600000000000)
	for _, cfg := range []Config{
		{PendingTTL: 2 * time.Second},
		{MaxPendingRows: 6, PendingTTL: 2 * time.Second},
		{SampleJoinTolerance: 10 * time.Millisecond, PendingTTL: 2 * time.Second},
		{SampleJoinTolerance: time.Second, MaxPendingRows: 20, PendingTTL: 2 * time.Second},
		{MaxSeries: 2, MaxIdentityMappings: 2, PendingTTL: 2 * time.Second},
	} {
		t.Run(fmt.Sprintf("tol=%v,rows=%d,series=%d", cfg.SampleJoinTolerance, cfg.MaxPendingRows, cfg.MaxSeries), func(t *testing.T) {
			zip, zclk := newTestConverter(cfg)
			rows, rclk := newTestConverter(cfg)
			rows.noZip = true
			gen := &joinBatchGen{rng: rand.New(rand.NewPCG(7, uint64(cfg.MaxPendingRows)))}
			for i := range gen.next {
				gen.next[i] = t0
			}
			var zipSamples int
			for batch := range 3000 {
				md := gen.batch()
				// The wall clock follows the data; now and then it jumps, so
				// that pending points expire.
				now := time.Unix(0, slices.Max(gen.next[:])).Add(time.Second)
				if batch%40 == 39 {
					now = now.Add(3 * time.Second)
				}
				zclk.t, rclk.t = now, now
				zippedBefore := zip.fast.zipped
				want := convertMetrics(t, rows, md)
				got := convertMetrics(t, zip, md)
				if zip.fast.zipped > zippedBefore {
					zipSamples += len(got.records)
				}
				require.Equal(t, want, got, "batch %d", batch)
				require.Equal(t, snapshot(rows), snapshot(zip), "batch %d", batch)
				require.Equal(t, rows.dev.m, zip.dev.m, "batch %d: device map", batch)
				require.Equal(t, rows.Stats(), zip.Stats(), "batch %d", batch)
				if batch%40 == 39 {
					require.Equal(t, rows.Expire(), zip.Expire(), "batch %d", batch)
				}
			}
			t.Logf("zip path: %d of %d rank batches, %d samples; %d read in lockstep, %d of them spilled", zip.fast.zipped, 3*3000, zipSamples, zip.fast.lockstep, zip.fast.spilled)
			require.Zero(t, rows.fast.zipped)
			require.Zero(t, rows.fast.lockstep)
			require.Greater(t, zip.fast.lockstep, uint64(1000), "rank batches read in lockstep")
			require.Greater(t, zip.fast.spilled, uint64(100), "lockstep blocks handed to the row path")
			// Most configurations zip about half the rank batches; a row
			// bound of 6 far fewer, as the rows kept leave no room.
			require.Greater(t, zip.fast.zipped, uint64(500), "rank batches joined by the zip path")
			require.Greater(t, zipSamples, 5000, "samples formed by the zip path")
		})
	}
}

// TestZipJoinAfterExpiry: once the pending TTL has dropped the rows of a
// series' newest device-used points, that time still bounds what the zip
// path may take; a batch before it joins as the row path joins it.
func TestZipJoinAfterExpiry(t *testing.T) {
	const t0 = int64(1767225600000000000)
	ms := int64(time.Millisecond)
	zip, zclk := newTestConverter(Config{PendingTTL: time.Second})
	rows, rclk := newTestConverter(Config{PendingTTL: time.Second})
	rows.noZip = true
	point := func(name string, ts int64) gaugePoint { return gaugePoint{name: name, ts: t0 + ts*ms, value: 1000} }
	batch := func(names []string, times ...int64) pmetric.Metrics {
		var pts []gaugePoint
		for _, name := range names {
			for _, ts := range times {
				pts = append(pts, point(name, ts))
			}
		}
		return gaugeBatch(rank0, pts...)
	}
	const usedName, reservedName, activeName = "gpu.memory.device.used", "gpu.memory.allocator.reserved", "gpu.memory.allocator.active"
	for i, step := range []struct {
		md      pmetric.Metrics
		advance time.Duration
		zipped  bool
	}{
		{batch([]string{usedName, reservedName}, 0, 40, 80, 120, 160), 600 * time.Millisecond, true},
		// A late point of a new role: the row at 40 ms arrives anew.
		{batch([]string{activeName}, 40), 700 * time.Millisecond, false},
		// Every row but the one at 40 ms has expired; the newest device-used
		// time is still 160 ms.
		{batch([]string{usedName, reservedName, activeName}, 100, 120), 0, false},
		{batch([]string{usedName, reservedName, activeName}, 200, 240), 0, true},
	} {
		zipped := zip.fast.zipped
		want, got := convertMetrics(t, rows, step.md), convertMetrics(t, zip, step.md)
		require.Equal(t, want, got, "batch %d", i)
		require.Equal(t, snapshot(rows), snapshot(zip), "batch %d", i)
		require.Equal(t, step.zipped, zip.fast.zipped > zipped, "batch %d zipped", i)
		zclk.advance(step.advance)
		rclk.advance(step.advance)
		require.Equal(t, rows.Expire(), zip.Expire())
	}
	require.Len(t, zip.series[seriesKey{job: "j", rank: 0}].rows, 5, "40, 100, 120, 200, 240 ms")
}

// FuzzZipJoin decodes arbitrary bytes as OTLP metrics and converts them
// with the zip and lockstep paths and without them, twice (the second time
// a resend, a second later): both must emit the same samples and skips and
// keep the same join state. The seeds are exporter-shaped batches, which
// the lockstep path reads, one with a point that names another rank.
func FuzzZipJoin(f *testing.F) {
	const t0 = int64(1767225600000000000)
	otherRank := exporterBatch(t0)
	otherRank.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(1).Gauge().DataPoints().At(2).Attributes().PutInt("training.rank", 1)
	for _, md := range []pmetric.Metrics{exporterBatch(t0), otherRank, (&joinBatchGen{rng: rand.New(rand.NewPCG(1, 1)), next: [3]int64{t0, t0, t0}}).batch()} {
		b, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		md, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(b)
		if err != nil {
			return
		}
		zip, zclk := newTestConverter(Config{})
		rows, rclk := newTestConverter(Config{})
		rows.noZip = true
		now := time.Unix(0, t0).Add(time.Second)
		zclk.t, rclk.t = now, now
		for batch := range 2 {
			require.Equal(t, convertMetrics(t, rows, md), convertMetrics(t, zip, md), "batch %d", batch)
			require.Equal(t, snapshot(rows), snapshot(zip), "batch %d", batch)
			zclk.advance(time.Second)
			rclk.advance(time.Second)
		}
	})
}
