package output

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// AppendLogs appends one result log record per item (contract §5.3). The
// body is a string: the result in the reference serialisation (with the
// phase_attribution member when withPhase) and "job_id" appended as the
// last member, so that the reference's keys keep their order and position
// and a consumer that drops job_id gets the reference text back. Timestamp
// = interval_start_ns, event name collective_attribution, severity INFO,
// attributes and resources as the result spans.
func AppendLogs(dst plog.Logs, items []Item, withPhase bool) {
	if len(items) == 0 {
		return
	}
	groups := map[resourceKey]plog.LogRecordSlice{}
	var buf []byte
	for i := range items {
		it := &items[i]
		key := resourceKey{it.JobID, it.Host}
		lrs, ok := groups[key]
		if !ok {
			rl := dst.ResourceLogs().AppendEmpty()
			putResource(rl.Resource().Attributes(), it.JobID, it.Host)
			sl := rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName(ScopeName)
			lrs = sl.LogRecords()
			groups[key] = lrs
		}
		lr := lrs.AppendEmpty()
		lr.SetTimestamp(pcommon.Timestamp(it.Result.IntervalStartNs))
		lr.SetEventName(ResultName)
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
		lr.SetSeverityText("INFO")
		buf = AppendResultBody(buf[:0], it, withPhase)
		lr.Body().SetStr(string(buf))
		putResultAttributes(lr.Attributes(), it)
	}
}

// AppendResultBody appends the contract §5.3 body text of it: the reference JSON of
// the result with `"job_id":"<job>"` as its last member.
func AppendResultBody(dst []byte, it *Item, withPhase bool) []byte {
	dst = attribution.AppendResultJSON(dst, it.Result, withPhase)
	dst = dst[:len(dst)-1] // the closing brace
	dst = append(dst, `,"job_id":`...)
	dst = telemetry.AppendString(dst, it.JobID)
	return append(dst, '}')
}
