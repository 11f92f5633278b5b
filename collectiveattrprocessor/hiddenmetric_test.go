package collectiveattrprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadatatest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
)

// TestHiddenMetricEqualsRecorded: the gpu.memory.hidden the processor
// delivers for a round past the cap (several jobs, one the empty id, ranks
// in runs, negative, zero and positive gaps, then each rank's newest point
// past the cap, newestHidden) is, byte for byte on the wire, what the
// generated builder records for the points the contract gives: the round's
// first maxHiddenPointsPerTick in arrival order, then each rank's newest
// past the cap by job and rank; one resource per job in order of first
// appearance.
func TestHiddenMetricEqualsRecorded(t *testing.T) {
	p := newPipelines(t, createDefaultConfig().(*Config), componenttest.NewTelemetry())
	c := p.core
	jobs := []string{"j", "", "a"}
	var want []output.HiddenPoint
	var b batchCounts
	c.mu.Lock()
	for i := range int64(maxHiddenPointsPerTick) {
		job, rank, used := jobs[i/1000%3], i/10%4, i%5*gib
		c.addHidden(&b, job, rank, i, used, 2*gib, 0)
		want = append(want, output.HiddenPoint{JobID: job, Rank: rank, TimestampNs: i, Bytes: used - 2*gib})
	}
	for _, pt := range []struct {
		job      string
		rank, ts int64
		usedGiB  int64
	}{{"j", 1, 70_000, 3}, {"", 0, 70_002, 1}, {"j", 1, 69_999, 9}, {"a", 3, 70_001, 2}, {"", 0, 70_003, 0}, {"j", 0, 70_000, 2}} {
		c.addHidden(&b, pt.job, pt.rank, pt.ts, pt.usedGiB*gib, 2*gib, 0)
	}
	want = append(want,
		output.HiddenPoint{JobID: "", Rank: 0, TimestampNs: 70_003, Bytes: -2 * gib},
		output.HiddenPoint{JobID: "a", Rank: 3, TimestampNs: 70_001, Bytes: 0},
		output.HiddenPoint{JobID: "j", Rank: 0, TimestampNs: 70_000, Bytes: 0},
		output.HiddenPoint{JobID: "j", Rank: 1, TimestampNs: 70_000, Bytes: gib})
	hidden := c.takeHiddenLocked()
	c.mu.Unlock()
	c.evalMu.Lock()
	c.emit(context.Background(), nil, hidden, nil, time.Unix(0, 80_000), nil, nil)
	c.evalMu.Unlock()
	p.shutdown(t)

	got := pmetric.NewMetrics()
	for _, md := range p.msink.AllMetrics() {
		for i := range md.ResourceMetrics().Len() {
			rm := md.ResourceMetrics().At(i)
			rm.ScopeMetrics().RemoveIf(func(sm pmetric.ScopeMetrics) bool {
				sm.Metrics().RemoveIf(func(m pmetric.Metric) bool { return m.Name() != "gpu.memory.hidden" })
				return sm.Metrics().Len() == 0
			})
			if rm.ScopeMetrics().Len() > 0 {
				rm.CopyTo(got.ResourceMetrics().AppendEmpty())
			}
		}
	}
	mb := metadata.NewMetricsBuilder(metadata.NewDefaultMetricsBuilderConfig(), metadatatest.NewSettings(componenttest.NewTelemetry()), metadata.WithStartTime(0))
	rb := mb.NewResourceBuilder()
	for _, job := range jobs {
		for _, h := range want {
			if h.JobID == job {
				mb.RecordGpuMemoryHiddenDataPoint(pcommon.Timestamp(h.TimestampNs), h.Bytes, h.JobID, h.Rank)
			}
		}
		rb.SetServiceName(output.ServiceName)
		rb.SetTrainingJobID(job)
		mb.EmitForResource(metadata.WithResource(rb.Emit()))
	}
	recorded := mb.Emit()
	require.NoError(t, pmetrictest.CompareMetrics(recorded, got))
	var pm pmetric.ProtoMarshaler
	wb, err := pm.MarshalMetrics(recorded)
	require.NoError(t, err)
	gb, err := pm.MarshalMetrics(got)
	require.NoError(t, err)
	assert.Equal(t, wb, gb)
	assert.Equal(t, maxHiddenPointsPerTick+4, got.DataPointCount())
}
