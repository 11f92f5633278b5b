package ingest

import "slices"

// batchPoint is a valid point of one call, waiting for the end of the call.
type batchPoint struct {
	tsNs  int64
	bytes int64
	role  role
	// session is the sending process's index in the series' session table.
	session uint8
}

// joinBatch buffers the points s received in this call that wait in
// s.batch (see metricsConverter.addNow), as they arrived, and hands the
// samples the call's points form to emit.
func (c *metricsConverter) joinBatch(s *series, nowNs int64, emit func(*SampleRun), skip func(Skip)) {
	defer s.dropped.report(skip)
	if len(s.batch) > 0 {
		if !s.perProcess && slices.ContainsFunc(s.batch, func(p batchPoint) bool { return p.role == roleProcessUsed }) {
			s.becomePerProcess()
		}
		for _, p := range s.batch {
			s.shedUsed += s.add(s.bufferedRole(p.role), p.tsNs, p.bytes, nowNs, p.session, c.cfg.MaxPendingRows)
		}
		s.batch = keptScratch(s.batch)
	}
	c.shed(s.shedUsed, skip)
	s.shedUsed = 0
	c.formSamples(s, emit, skip)
}
