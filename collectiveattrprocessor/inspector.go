package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import "time"

// retryInspector joins the NCCL Inspector records that waited for their
// rank's telemetry and buffers their markers, and gives up those held past
// nccl_inspector.hold (unjoinable). Called on each evaluation with mu held,
// before the sweep, so that a job finalised now has the markers joined
// now. What it did is counted as the logs signal's, where the records came
// from.
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
	return b
}
