package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
)

// retryInspector joins the NCCL Inspector records that waited for their
// rank's telemetry and buffers their markers, gives up those held past
// nccl_inspector.hold (unjoinable), and publishes the Inspector counts.
// Called on each evaluation with mu held, before the sweep, so that a job
// finalised now has the markers joined now. What it did is counted as the
// logs signal's, where the records came from.
func (c *core) retryInspector(now time.Time) batchCounts {
	var b batchCounts
	for r := range c.conv.RetryInspector() {
		switch {
		case r.Record != nil:
			c.store.AddRecord(r.Record, now)
		case r.Skip != nil:
			b.skipped[reasonIndex(r.Skip.Reason)]++
			c.skips.log(signalLogs, *r.Skip, 1)
		}
	}
	c.takeStoreTally(signalLogs, &b)
	c.tel.inspector.publish(c.tel.tb, c.conv.InspectorStats())
	return b
}

// inspectorOutcomes are the outcome attribute values of inspector_records.
var inspectorOutcomes = [...]metadata.AttributeInspectorOutcome{
	metadata.AttributeInspectorOutcomeRead,
	metadata.AttributeInspectorOutcomeJoined,
	metadata.AttributeInspectorOutcomeInvalidOp,
	metadata.AttributeInspectorOutcomeWrappedSize,
	metadata.AttributeInspectorOutcomeNanBandwidth,
}

// inspectorTelemetry publishes the converter's cumulative Inspector counts
// as the inspector_records counter (the increase since the last publish)
// and the held records as the inspector_records_held gauge. publish runs
// with the core's mu held.
type inspectorTelemetry struct {
	outcomes [len(inspectorOutcomes)]metric.AddOption
	last     [len(inspectorOutcomes)]uint64
	held     atomic.Int64
}

func (t *inspectorTelemetry) register(tb *metadata.TelemetryBuilder) error {
	for i, o := range inspectorOutcomes {
		t.outcomes[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", o.String())))
	}
	return tb.RegisterProcessorCollectiveattrInspectorRecordsHeldCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(t.held.Load())
		return nil
	})
}

func (t *inspectorTelemetry) publish(tb *metadata.TelemetryBuilder, st ingest.InspectorStats) {
	now := [len(inspectorOutcomes)]uint64{st.Read, st.Joined, st.InvalidOps, st.WrappedSizes, st.NaNBandwidths}
	for i, n := range now {
		if n > t.last[i] {
			tb.ProcessorCollectiveattrInspectorRecords.Add(context.Background(), int64(n-t.last[i]), t.outcomes[i])
		}
	}
	t.last = now
	t.held.Store(int64(st.Held))
}
