package output

import (
	"fmt"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
)

// recordedHidden is gpu.memory.hidden as the generated builder records it,
// a RecordGpuMemoryHiddenDataPoint per point, one resource per job in order
// of first appearance, the job's points in their order: what Append's
// gpu.memory.hidden must equal.
func recordedHidden(hidden []HiddenPoint) pmetric.Metrics {
	cfg := metadata.NewDefaultMetricsBuilderConfig()
	set := processortest.NewNopSettings(metadata.Type)
	set.BuildInfo.Version = testScopeVersion
	mb := metadata.NewMetricsBuilder(cfg, set, metadata.WithStartTime(0))
	rb := mb.NewResourceBuilder()
	var jobs []string
	seen := map[string]bool{}
	for _, h := range hidden {
		if !seen[h.JobID] {
			seen[h.JobID] = true
			jobs = append(jobs, h.JobID)
		}
	}
	for _, job := range jobs {
		for _, h := range hidden {
			if h.JobID == job {
				mb.RecordGpuMemoryHiddenDataPoint(pcommon.Timestamp(h.TimestampNs), h.Bytes, h.JobID, h.Rank)
			}
		}
		rb.SetServiceName(ServiceName)
		rb.SetTrainingJobID(job)
		mb.EmitForResource(metadata.WithResource(rb.Emit()))
	}
	return mb.Emit()
}

// onlyHidden removes every metric but gpu.memory.hidden from md, and the
// resources left without one.
func onlyHidden(md pmetric.Metrics) pmetric.Metrics {
	md.ResourceMetrics().RemoveIf(func(rm pmetric.ResourceMetrics) bool {
		rm.ScopeMetrics().RemoveIf(func(sm pmetric.ScopeMetrics) bool {
			sm.Metrics().RemoveIf(func(m pmetric.Metric) bool { return m.Name() != "gpu.memory.hidden" })
			return sm.Metrics().Len() == 0
		})
		return rm.ScopeMetrics().Len() == 0
	})
	return md
}

// TestAppendHiddenEqualsRecorded: Append's gpu.memory.hidden is the
// generated builder's, byte for byte on the wire, for points of several
// jobs (one the empty id) interleaved, ranks in runs and alone, negative,
// zero and large gaps, beside the other result metrics, over several
// Appends of one Metrics (it reuses its buffers).
func TestAppendHiddenEqualsRecorded(t *testing.T) {
	const t0 = 1767225600000000000
	var interleaved []HiddenPoint
	for s := range int64(3) {
		for r := range int64(5) {
			for k := range int64(4) {
				ts := t0 + s*1e9 + k*250e6 + r*3e6
				interleaved = append(interleaved, HiddenPoint{"job-a", r, ts, 1<<30 - r<<20 + k - 2})
			}
		}
		interleaved = append(interleaved, HiddenPoint{"", 2, t0 + s*1e9, -(5 << 20) * s})
		interleaved = append(interleaved, HiddenPoint{"job-b", 1 << 33, t0 + s*1e9 + 1, 1 << 62})
	}
	rounds := [][]HiddenPoint{
		interleaved,
		{{"job-b", 0, t0, 0}},
		{{"", 0, t0, -1}, {"job-c", 7, t0 + 1, 3}, {"", 0, t0 + 2, -2}, {"job-a", 1, t0, 1 << 30}},
		interleaved[:17],
	}
	m := testMetrics()
	for i, hidden := range rounds {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			peaks := []PeakPoint{{JobID: "job-a", Rank: 1, HiddenBytes: 2 << 30, DeviceUsedBytes: 60 << 30, DeviceTotalBytes: 80 << 30}}
			ledger := []LedgerPoint{{JobID: "job-d", Rank: 0, TimestampNs: t0, NCCL: 1, Context: 2, Unexplained: -3}}
			counts := []IntervalCount{{JobID: "", Rank: 2, Classification: "collective_likely", Count: 1, StartNs: t0}}
			got := pmetric.NewMetrics()
			m.Append(got, hidden, peaks, ledger, counts, nil, t0+10e9)
			got = onlyHidden(got)
			want := recordedHidden(hidden)
			require.NoError(t, pmetrictest.CompareMetrics(want, got))
			var pm pmetric.ProtoMarshaler
			wb, err := pm.MarshalMetrics(want)
			require.NoError(t, err)
			gb, err := pm.MarshalMetrics(got)
			require.NoError(t, err)
			assert.Equal(t, wb, gb)
			assert.Equal(t, len(hidden), got.DataPointCount())
		})
	}
}

// benchHidden is one 10 s round of ranks at 10 Hz as the processor keeps
// it: a second of each rank's samples in a row (an OTLP resource is one
// rank), the ranks one after another, then the next second.
func benchHidden(ranks int64) []HiddenPoint {
	const t0 = 1767225600000000000
	hidden := make([]HiddenPoint, 0, ranks*100)
	for s := range int64(10) {
		for r := range ranks {
			for k := range int64(10) {
				ts := t0 + s*1e9 + k*100e6
				hidden = append(hidden, HiddenPoint{"llama-70b-pretrain-0042", r, ts, 1<<30 + (ts/100e6)%7<<20})
			}
		}
	}
	return hidden
}

// BenchmarkAppendHidden is the cost of building gpu.memory.hidden in
// Append, by ranks (100 points each); cpu-ns/point counts the process's
// CPU, the garbage collector's included.
func BenchmarkAppendHidden(b *testing.B) {
	for _, ranks := range []int64{64, 512, 1024} {
		hidden := benchHidden(ranks)
		b.Run(fmt.Sprintf("ranks=%d", ranks), func(b *testing.B) {
			m := testMetrics() // the processor keeps one
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				m.Append(pmetric.NewMetrics(), hidden, nil, nil, nil, nil, 0)
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N*len(hidden)), "cpu-ns/point")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(hidden)), "ns/point")
		})
	}
}
