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

// exporterNames are the in-process exporter's five memory gauges.
var exporterNames = []string{"gpu.memory.device.used", "gpu.memory.device.free", "gpu.memory.device.total", "gpu.memory.allocator.reserved", "gpu.memory.allocator.allocated"}

// directBatchGen makes random metrics batches, mostly of the in-process
// exporter's shape (a resource per rank, its gauges sharing each
// collection's timestamp), with every way a resource can fail to be that
// shape, or its rank's rows can take part in its samples, and resources of
// ranks that report their process's memory.
type directBatchGen struct {
	rng *rand.Rand
	t0  int64
}

func (g *directBatchGen) batch(b int) pmetric.Metrics {
	ms := int64(time.Millisecond)
	md := pmetric.NewMetrics()
	for range 1 + g.rng.IntN(6) {
		rank := g.rng.Int64N(4)
		// A rank reporting its process's memory sends the batch's points
		// through series.batch; one of the ranks above, rarely, as well.
		process := g.rng.IntN(12) == 0
		if process && g.rng.IntN(8) != 0 {
			rank = 4 + g.rng.Int64N(2)
		}
		rm := md.ResourceMetrics().AppendEmpty()
		_ = rm.Resource().Attributes().FromRaw(map[string]any{"training.job.id": "j", "training.rank": rank, "host.name": "h", "process.pid": int64(100 + g.rng.IntN(2))})
		names := slices.Clone(exporterNames)
		switch g.rng.IntN(13) {
		case 0: // a role missing: no reserved, or no used (pending rows)
			names = slices.Delete(names, 3, 4)
		case 1:
			names = names[:1]
		case 12: // partners waiting for their device-used points
			names = names[1:]
		case 2:
			names = append(names, "gpu.memory.allocator.active", "gpu.memory.allocator.inactive")
		case 3: // only a partner the others lack
			names = []string{"gpu.memory.allocator.active"}
		case 4: // DCGM's framebuffer in MiB: used, free and reserved, no total
			names = []string{"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED", "gpu.memory.allocator.reserved"}
		case 5:
			g.rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		}
		if process {
			names = []string{"gpu.memory.process.used", "gpu.memory.allocator.reserved"}
		}
		n := 1 + g.rng.IntN(5)
		if g.rng.IntN(10) == 0 {
			n = 8 + g.rng.IntN(5)
		}
		start := g.t0 + int64(b)*400*ms + g.rng.Int64N(3)*ms
		switch g.rng.IntN(10) {
		case 0:
			start -= 400 * ms // the previous batch's times: resent
		case 1:
			start -= 1500 * ms // late
		case 2:
			start += 150 * ms
		}
		scopes := []pmetric.MetricSlice{rm.ScopeMetrics().AppendEmpty().Metrics()}
		if g.rng.IntN(8) == 0 {
			scopes = append(scopes, rm.ScopeMetrics().AppendEmpty().Metrics())
		}
		if g.rng.IntN(10) == 0 {
			other := scopes[0].AppendEmpty()
			other.SetName("process.cpu.time")
			other.SetEmptyGauge().DataPoints().AppendEmpty().SetDoubleValue(1)
		}
		perturb := g.rng.IntN(30)
		for k, name := range names {
			m := scopes[k%len(scopes)].AppendEmpty()
			m.SetName(name)
			var dps pmetric.NumberDataPointSlice
			if perturb == 0 && k == 1 {
				sum := m.SetEmptySum()
				sum.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
				dps = sum.DataPoints()
			} else if perturb == 1 && k == 1 {
				sum := m.SetEmptySum()
				sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				dps = sum.DataPoints()
			} else {
				dps = m.SetEmptyGauge().DataPoints()
			}
			for l := range int64(n) {
				ts := start + l*100*ms
				pk := k == len(names)-1 && l == int64(n)-1
				switch {
				case perturb == 2 && pk:
					continue // one point fewer
				case perturb == 3 && pk:
					ts += 7 * ms // off its collection's time
				case perturb == 4 && l == 1:
					ts -= 100 * ms // repeated timestamp
				case perturb == 5 && l == 0:
					ts += 250 * ms // out of order
				case perturb == 6 && pk:
					ts += int64(time.Hour) // in the future
				case perturb == 7 && l == 0 && k == 0:
					ts = 0
				}
				dp := dps.AppendEmpty()
				dp.SetTimestamp(pcommon.Timestamp(ts))
				v := 1<<30 + g.rng.Int64N(1<<20)
				switch name {
				case "gpu.memory.device.total":
					v = 80 << 30
				case "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED":
					v >>= 20
				}
				switch {
				case perturb == 8 && pk:
					v = -1
				case perturb == 9 && pk && name == "gpu.memory.device.used":
					v = 90 << 30 // above the total: an invalid sample
				case perturb == 10 && l == 0:
					v = 1 << 50
				}
				if perturb == 11 && pk {
					dp.SetDoubleValue(float64(v) + 0.4)
				} else {
					dp.SetIntValue(v)
				}
				if perturb == 12 && pk {
					dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
				}
				if perturb == 13 && l == 0 {
					dp.Attributes().PutInt("training.rank", (rank+1)%4) // another rank's point
				}
			}
		}
	}
	return md
}

// seriesState is a join buffer without what only speeds it up (where the
// next point is looked for, the storage under the rows, scratch).
func seriesState(s *series) series {
	st := *s
	st.rows, st.store = slices.Clone(s.rows), nil
	st.cursor, st.touchedGen, st.batch, st.direct = 0, 0, nil, 0
	st.sessions = slices.Clone(s.sessions)
	return st
}

// directJoinPair is two converters of one configuration, one of them
// without the direct way, fed the same batches.
type directJoinPair struct {
	direct, join *Converter
	dclk, jclk   *fakeClock
	// held counts the batches that held a resource aside.
	held    int
	samples int
	reasons map[SkipReason]int
}

func newDirectJoinPair(cfg Config) *directJoinPair {
	p := &directJoinPair{reasons: map[SkipReason]int{}}
	p.direct, p.dclk = newTestConverter(cfg)
	p.join, p.jclk = newTestConverter(cfg)
	p.join.metrics.joinOnly = true
	return p
}

// convert converts md with both and requires the same samples, skips,
// counts and join buffers.
func (p *directJoinPair) convert(t *testing.T, md pmetric.Metrics, b int) {
	t.Helper()
	p.direct.metrics.directs = nil
	got := convertMetrics(t, p.direct, md)
	if cap(p.direct.metrics.directs) > 0 {
		p.held++
	}
	want := convertMetrics(t, p.join, md)
	require.Equal(t, want.records, got.records, "batch %d", b)
	require.Equal(t, want.samples, got.samples, "batch %d", b)
	require.Equal(t, want.skips, got.skips, "batch %d", b)
	require.Equal(t, p.join.Stats(), p.direct.Stats(), "batch %d", b)
	require.Equal(t, len(p.join.metrics.series), len(p.direct.metrics.series))
	for k, s := range p.join.metrics.series {
		require.Contains(t, p.direct.metrics.series, k)
		require.Equal(t, seriesState(s), seriesState(p.direct.metrics.series[k]), "batch %d, rank %d", b, k.rank)
	}
	p.samples += len(want.samples)
	for _, r := range want.reasons() {
		p.reasons[r]++
	}
}

// advance moves both clocks by d and, with expire, expires both.
func (p *directJoinPair) advance(t *testing.T, d time.Duration, expire bool) {
	t.Helper()
	p.dclk.advance(d)
	p.jclk.advance(d)
	if expire {
		require.Equal(t, p.join.Expire(), p.direct.Expire())
		require.Equal(t, p.join.TakeOrphaned(), p.direct.TakeOrphaned())
	}
}

// TestDirectEqualsJoin: forming a resource's samples straight from its
// points (directjoin.go) gives what the join gives, and leaves the join
// buffers as the join leaves them. The same random batches (exporter-shaped
// resources, resent, late, out of order, with repeated or missing points,
// missing and extra roles, several resources of one rank, ranks with
// pending rows, invalid values, other ranks' points, ...) go through a
// converter with and without the direct way; after every batch (and the
// expiries between them) the samples, skips, counts and every rank's join
// buffer are equal.
func TestDirectEqualsJoin(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{MaxPendingRows: 12},
		{SampleJoinTolerance: 50 * time.Millisecond, PendingTTL: 2 * time.Second},
		{SampleJoinTolerance: 450 * time.Millisecond, MaxPendingRows: 9},
		{SampleJoinTolerance: 200 * time.Millisecond, MaxPendingRows: 7},
	} {
		t.Run(fmt.Sprintf("tol=%v,rows=%d", cfg.SampleJoinTolerance, cfg.MaxPendingRows), func(t *testing.T) {
			gen := directBatchGen{rng: rand.New(rand.NewPCG(23, uint64(cfg.MaxPendingRows))), t0: testNow.Add(-time.Minute).UnixNano()}
			p := newDirectJoinPair(cfg)
			for b := range 400 {
				p.convert(t, gen.batch(b), b)
				step := time.Duration(gen.rng.IntN(900)) * time.Millisecond
				expire := gen.rng.IntN(3) == 0
				if gen.rng.IntN(12) == 0 {
					step, expire = step+40*time.Second, true
				}
				p.advance(t, step, expire)
			}
			t.Log(p.held, p.samples, p.reasons)
			require.Greater(t, p.held, 60, "many batches hold a resource of the exporter's shape")
			require.Greater(t, p.samples, 2000)
			for _, r := range []SkipReason{SkipUnjoinable, SkipDuplicate, SkipOrphaned, SkipInvalidValue, SkipFuture} {
				require.Positive(t, p.reasons[r], r)
			}
		})
	}
}
