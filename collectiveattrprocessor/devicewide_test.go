package collectiveattrprocessor

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/ledger"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// contextsOnGPU0 is what the other ranks' stray CUDA contexts hold on GPU
// 0 when each of them also opened one there (pytorch#135279): about 500
// MiB each.
func contextsOnGPU0(worldSize int64) int64 { return (worldSize - 1) * 500 * mib }

// gpuUUID is the UUID of rank r's GPU in these tests.
func gpuUUID(r int64) string { return fmt.Sprintf("GPU-4c226d4d-8129-a7cf-fecd-daa9018b4b%02d", r) }

// onOneNode gives every rank's resource in md a host and its GPU's UUID,
// as ranks in containers on one node send them (each sees its GPU as
// index 0).
func onOneNode(md pmetric.Metrics) {
	for _, rm := range md.ResourceMetrics().All() {
		attrs := rm.Resource().Attributes()
		rank, _ := attrs.Get("training.rank")
		attrs.PutStr("host.name", "node-a")
		attrs.PutInt("gpu.index", 0)
		attrs.PutStr("gpu.uuid", gpuUUID(rank.Int()))
	}
}

// rankMetric calls f on every point of metric name of rank's resource.
func rankMetric(md pmetric.Metrics, rank int64, name string, f func(m pmetric.Metric, dp pmetric.NumberDataPoint)) {
	for _, rm := range md.ResourceMetrics().All() {
		if r, _ := rm.Resource().Attributes().Get("training.rank"); r.Int() != rank {
			continue
		}
		for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
			if m.Name() == name {
				for _, dp := range m.Gauge().DataPoints().All() {
					f(m, dp)
				}
			}
		}
	}
}

// deviceWideResults is results (texts) of a job whose memory was
// device-wide gauges: each with device_wide_memory among its reason codes,
// sorted; but for a change only NCCL's accounting saw (the rank's or its
// members'), which no memory sample measured.
func deviceWideResults(t *testing.T, results []string) []string {
	t.Helper()
	out := make([]string, len(results))
	for i, s := range results {
		var r struct {
			Codes []string `json:"reason_codes"`
		}
		require.NoError(t, json.Unmarshal([]byte(s), &r))
		if slices.Contains(r.Codes, evidence.ReasonAccountingOnly) || slices.Contains(r.Codes, evidence.ReasonAccountingMembersOnly) {
			out[i] = s
			continue
		}
		old, err := json.Marshal(r.Codes)
		require.NoError(t, err)
		codes := append(slices.Clone(r.Codes), evidence.ReasonDeviceWideMemory)
		slices.Sort(codes)
		now, err := json.Marshal(codes)
		require.NoError(t, err)
		out[i] = strings.Replace(s, `"reason_codes":`+string(old), `"reason_codes":`+string(now), 1)
	}
	slices.Sort(out)
	return out
}

// clonedMetrics is a copy of md.
func clonedMetrics(md pmetric.Metrics) pmetric.Metrics {
	out := pmetric.NewMetrics()
	md.CopyTo(out)
	return out
}

// ledgerHidden is the hidden memory of rank in the ledger's parts: NCCL's,
// the context's and the unexplained.
func ledgerHidden(parts map[string]int64, rank int64) int64 {
	var sum int64
	for _, part := range []string{"nccl", "context", "unexplained"} {
		sum += parts[fmt.Sprintf("%d/%s", rank, part)]
	}
	return sum
}

// TestContextsOnGPU0 is the "every rank also opens a context on GPU 0"
// job (pytorch#135279): GPU 0's used memory holds rank 0's own and the
// other ranks' contexts, about 500 MiB each. When the ranks report their
// own process's GPU memory (process.gpu.memory.usage), rank 0's hidden
// memory, its results (peak gap, excess) and its ledger gauge
// (gpu.memory.hidden.usage) are its process's, even with DCGM's
// device-wide points of GPU 0 joined to it by UUID between its samples:
// the results equal the CLI's on the job's records, without the
// device_wide_memory code. When the ranks report device-wide used memory
// (NVML device info, cudaMemGetInfo), rank 0's hidden memory and peaks are
// inflated by the contexts and every result says device_wide_memory.
func TestContextsOnGPU0(t *testing.T) {
	shape := jobsim.DefaultQualityShape()
	shape.Duration = [2]time.Duration{40 * time.Second, 50 * time.Second}
	c, err := jobsim.GenerateQualityCase("easy", 1, shape, false)
	require.NoError(t, err)
	const job = "contexts"
	var world int64
	var last0 *telemetry.Event // rank 0's newest sample
	for i := range c.Events {
		e := &c.Events[i]
		e.JobID = job
		world = max(world, e.WorldSize)
		if e.Rank == 0 && attribution.IsSample(e) && (last0 == nil || e.TimestampNs >= last0.TimestampNs) {
			last0 = e
		}
	}
	contexts := contextsOnGPU0(world)
	ownHidden0 := attribution.HiddenGap(last0.DeviceUsedBytes.Value, last0.AllocatorReservedBytes.Value)
	require.Positive(t, ownHidden0)

	md, td, lines, _ := evidenceOTLP(t, job, c.Events)
	want := evidenceBatch(t, lines, "medium")
	wantResults := evidenceBatchResults(t, lines, "medium")
	require.True(t, slices.ContainsFunc(wantResults, func(r attribution.Result) bool {
		return r.Rank == 0 && r.Collective != nil
	}), "rank 0 has results at collectives")
	onOneNode(md)

	t.Run("per-process memory", func(t *testing.T) {
		md := clonedMetrics(md)
		for _, rm := range md.ResourceMetrics().All() {
			for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
				if m.Name() == "gpu.memory.device.used" {
					m.SetName("process.gpu.memory.usage")
				}
			}
		}
		// dcgm-exporter's GPU 0 line, 50 ms after each of rank 0's
		// samples: every process's memory on GPU 0, the contexts included.
		dcgm := md.ResourceMetrics().AppendEmpty()
		dcgm.Resource().Attributes().PutStr("service.name", "dcgm-exporter")
		used := dcgm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		used.SetName("DCGM_FI_DEV_FB_USED")
		dps := used.SetEmptyGauge().DataPoints()
		rankMetric(md, 0, "process.gpu.memory.usage", func(_ pmetric.Metric, p pmetric.NumberDataPoint) {
			dp := dps.AppendEmpty()
			dp.SetTimestamp(p.Timestamp() + pcommon.Timestamp(50*time.Millisecond))
			dp.SetIntValue((p.IntValue() + contexts) >> 20)
			dp.Attributes().PutStr("gpu", "0")
			dp.Attributes().PutStr("UUID", gpuUUID(0))
			dp.Attributes().PutStr("Hostname", "node-a")
		})
		require.Positive(t, dps.Len())

		p := runEvidenceOTLP(t, lines, md, td)
		got := loggedResultTexts(p.lsink)
		slices.Sort(got)
		slices.Sort(want)
		assertSameResults(t, want, got)
		assert.Equal(t, ownHidden0, ledgerHidden(ledgerParts(p.msink.AllMetrics()), 0), "rank 0's ledger: its own hidden memory")
	})

	t.Run("device-wide memory", func(t *testing.T) {
		md := clonedMetrics(md)
		rankMetric(md, 0, "gpu.memory.device.used", func(_ pmetric.Metric, dp pmetric.NumberDataPoint) {
			dp.SetIntValue(dp.IntValue() + contexts)
		})
		p := runEvidenceOTLP(t, lines, md, td)
		got := loggedResultTexts(p.lsink)
		require.Len(t, got, len(want))
		wideWant := deviceWideResults(t, want)
		inflated := 0
		for _, s := range got {
			var r struct {
				Rank     int64    `json:"rank"`
				Codes    []string `json:"reason_codes"`
				Evidence struct {
					PeakGap int64 `json:"peak_gap_bytes"`
				} `json:"evidence"`
			}
			require.NoError(t, json.Unmarshal([]byte(s), &r))
			assert.Contains(t, r.Codes, evidence.ReasonDeviceWideMemory, "every result says its memory was device-wide")
			if r.Rank == 0 {
				i := slices.IndexFunc(wantResults, func(w attribution.Result) bool {
					return w.Rank == 0 && strings.Contains(s, fmt.Sprintf(`"interval_start_ns":%d,`, w.IntervalStartNs))
				})
				require.GreaterOrEqual(t, i, 0, "rank 0's result %s at a time the CLI found one", s)
				assert.Equal(t, wantResults[i].Evidence.PeakGapBytes+contexts, r.Evidence.PeakGap, "rank 0's peak holds the other ranks' contexts")
				inflated++
			} else {
				assert.Contains(t, wideWant, s, "rank %d: the CLI's result but for the code", r.Rank)
			}
		}
		assert.Positive(t, inflated)
		assert.Equal(t, ownHidden0+contexts, ledgerHidden(ledgerParts(p.msink.AllMetrics()), 0), "rank 0's ledger holds the contexts")
	})
}

// TestLedgerGrowthSaysDeviceWide: the ledger's unexplained_growth result of
// a rank whose samples were device-wide over the growth says so (the
// growth may be another process's on the GPU); a rank whose samples were
// its process's does not.
func TestLedgerGrowthSaysDeviceWide(t *testing.T) {
	const s = int64(time.Second)
	t0 := int64(1_800_000_000) * s
	var samples evidence.Samples
	for ts := t0; ts < t0+90*s; ts += s / 10 {
		samples.TimesNs = append(samples.TimesNs, ts)
		samples.GapBytes = append(samples.GapBytes, gib+max(0, (ts-t0-20*s)/s)*8*mib)
		samples.TotalBytes = append(samples.TotalBytes, 80*gib)
	}
	last := samples.TimesNs[len(samples.TimesNs)-1]
	in := &evidence.Input{ExpectedWorldSize: 2, TraceStartNs: t0, Ranks: []evidence.RankData{
		{Rank: 0, Samples: samples, DeviceWideThroughNs: last},
		{Rank: 1, Samples: samples},
	}}
	_, growths, _ := newLedgers().evaluate("leak", in, nil, 0, nil, 2) // one group per rank
	require.Len(t, growths, 2)
	for _, g := range growths {
		want := []string{ledger.ReasonUnexplainedGrowth}
		if g.Rank == 0 {
			want = []string{evidence.ReasonDeviceWideMemory, ledger.ReasonUnexplainedGrowth}
		}
		assert.Equal(t, want, g.ReasonCodes, "rank %d", g.Rank)
	}
}
