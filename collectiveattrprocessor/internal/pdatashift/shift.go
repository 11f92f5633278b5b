// Package pdatashift moves the timestamps of benchmark batches, so that a
// batch cycled through a benchmark is the next seconds of a job rather than
// a replay. It serves the benchmarks of the processor and its ingest
// package.
package pdatashift // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/pdatashift"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Metrics moves every gauge data point of md by d.
func Metrics(md pmetric.Metrics, d time.Duration) {
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				for _, dp := range m.Gauge().DataPoints().All() {
					dp.SetTimestamp(dp.Timestamp() + pcommon.Timestamp(d))
				}
			}
		}
	}
}

// Traces moves every span and span event of td by d.
func Traces(td ptrace.Traces, d time.Duration) {
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				sp.SetStartTimestamp(sp.StartTimestamp() + pcommon.Timestamp(d))
				sp.SetEndTimestamp(sp.EndTimestamp() + pcommon.Timestamp(d))
				for _, ev := range sp.Events().All() {
					ev.SetTimestamp(ev.Timestamp() + pcommon.Timestamp(d))
				}
			}
		}
	}
}
