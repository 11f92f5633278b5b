package ingest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// memoResource is a resource's attributes in the order they are sent.
type memoResource []struct {
	key string
	val any
}

// randomResource draws a resource: mostly a rank's, in one of two key
// orders, sometimes with a world size it exceeds, a list attribute, another
// service name or host name, or no rank at all (joined by host and
// device). A rank's
// host and device are a function of the rank, and the job is one, so that
// no two ranks claim
// one device: which claim a device mapping holds would otherwise depend on
// when each was refreshed, which the memos change (every learnRefresh, not
// at every resource).
func randomResource(rng *rand.Rand) memoResource {
	rank := int64(rng.IntN(3))
	res := memoResource{
		{"service.name", "trainer"},
		{"training.job.id", "j"},
		{"training.rank", rank},
		{"host.name", fmt.Sprintf("node-%d", rank)},
		{"gpu.index", rank},
	}
	switch rng.IntN(8) {
	case 0:
		res[0], res[3] = res[3], res[0]
	case 1:
		res = append(res, struct {
			key string
			val any
		}{"training.world_size", int64(2)})
	case 2:
		res = append(res, struct {
			key string
			val any
		}{"process.command_args", []any{"python", "train.py"}})
	case 3:
		res[0].val = "evaluator"
	case 5: // the rank's second host name
		res[3].val = fmt.Sprintf("node-%d.cluster", rank)
	case 4:
		res = append(res[:2], res[3:]...) // no rank: a device-level resource
	}
	return res
}

func (r memoResource) putTo(m pcommon.Map) {
	for _, a := range r {
		if err := m.PutEmpty(a.key).FromRaw(a.val); err != nil {
			panic(err)
		}
	}
}

// TestResourceMemoMatchesResolving runs the same random metrics and traces
// batches through a converter with the resource memos and one without, and
// checks after every batch that both emitted the same records and skips
// and hold the same join buffers: resources mostly repeat at their position, and sometimes
// change, carry points with identity attributes of their own, or lose
// their join buffers to the pending TTL.
func TestResourceMemoMatchesResolving(t *testing.T) {
	const t0 = int64(1767225600000000000)
	cfg := Config{PendingTTL: 2 * time.Second, IdentityTTL: time.Hour}
	memo, mclk := newTestConverter(cfg)
	plain, pclk := newTestConverter(cfg)
	plain.noResourceMemo = true
	rng := rand.New(rand.NewPCG(11, 12))
	var positions [4]memoResource
	for i := range positions {
		positions[i] = randomResource(rng)
	}
	ts := t0
	hits := 0
	for batch := range 2000 {
		md := pmetric.NewMetrics()
		for i := range positions {
			if rng.IntN(6) == 0 {
				positions[i] = randomResource(rng)
			}
			rm := md.ResourceMetrics().AppendEmpty()
			positions[i].putTo(rm.Resource().Attributes())
			ms := rm.ScopeMetrics().AppendEmpty().Metrics()
			for _, name := range []string{"gpu.memory.device.used", "gpu.memory.allocator.reserved"} {
				m := ms.AppendEmpty()
				m.SetName(name)
				dps := m.SetEmptyGauge().DataPoints()
				for p := range 2 {
					dp := dps.AppendEmpty()
					dp.SetTimestamp(pcommon.Timestamp(ts + int64(p)*int64(10*time.Millisecond)))
					dp.SetIntValue(int64(1000 + rng.IntN(10)))
					switch rng.IntN(20) {
					case 0: // another rank's point, with its device
						rank := int64(rng.IntN(3))
						dp.Attributes().PutInt("training.rank", rank)
						dp.Attributes().PutStr("host.name", fmt.Sprintf("node-%d", rank))
						dp.Attributes().PutInt("gpu.index", rank)
					case 1: // attributes, none of them identity keys
						dp.Attributes().PutStr("pool", "large")
					}
				}
			}
		}
		// The same resources' NCCL spans, some naming a rank of their own.
		td := ptrace.NewTraces()
		for i := range positions {
			rs := td.ResourceSpans().AppendEmpty()
			positions[i].putTo(rs.Resource().Attributes())
			spans := rs.ScopeSpans().AppendEmpty().Spans()
			for p := range 2 {
				sp := spans.AppendEmpty()
				sp.SetName("ncclDevKernel_AllReduce_Sum_f32_RING_LL")
				sp.SetSpanID(pcommon.SpanID{byte(i), byte(p), byte(batch), byte(batch >> 8)})
				sp.SetStartTimestamp(pcommon.Timestamp(ts + int64(p)*int64(10*time.Millisecond)))
				sp.SetEndTimestamp(pcommon.Timestamp(ts + int64(p)*int64(10*time.Millisecond) + 1000))
				if rng.IntN(20) == 0 { // another rank's span, with its device
					rank := int64(rng.IntN(3))
					sp.Attributes().PutInt("training.rank", rank)
					sp.Attributes().PutStr("host.name", fmt.Sprintf("node-%d", rank))
					sp.Attributes().PutInt("gpu.index", rank)
				}
			}
		}
		ts += int64(100 * time.Millisecond)
		now := time.Unix(0, ts).Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
		mclk.t, pclk.t = now, now
		before := memo.fast.memoHits
		want := convertMetrics(t, plain, md)
		got := convertMetrics(t, memo, md)
		require.Equal(t, want, got, "batch %d", batch)
		require.Equal(t, snapshot(plain), snapshot(memo), "batch %d", batch)
		want, got = convertTraces(t, plain, td), convertTraces(t, memo, td)
		require.Equal(t, want, got, "batch %d traces", batch)
		hits += int(memo.fast.memoHits - before)
		if batch%30 == 29 {
			mclk.advance(3 * time.Second)
			pclk.advance(3 * time.Second)
			require.Equal(t, plain.Expire(), memo.Expire(), "batch %d", batch)
		}
	}
	require.Zero(t, plain.fast.memoHits)
	require.Greater(t, hits, 4000, "resources answered by the memo")
}
