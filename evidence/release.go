package evidence

// releasedTotal is what NCCL's accounting says step down ep of rank ri, the
// release of communicator comm (ncclCommAbort after a hang, or
// ncclCommDestroy), freed: the communicator's last reported total, where
// the fall matches it (within a quarter of the fall, or the rank's spike
// threshold). Releasing a communicator frees every buffer its memory
// manager tracked, and it reports no more: its last report lies before the
// fall was seen (within the accounting lookback of it), and the rank's
// samples go on for two of its reporting intervals after that report
// (evidence-mode §7.1). ok is false where the rank's accounting does not
// follow NCCL's buffers (cuMem off: the total reads 0 however much was
// freed), and where the communicator shares its memory manager with
// another series (split with shared resources: the manager, and its
// buffers, outlive the communicator).
func (m *matcher) releasedTotal(ri int32, ep *episode, comm string) (freed int64, ok bool) {
	rd := &m.in.Ranks[ri]
	ra := m.rankAccounting(ri)
	if comm == "" || !ra.tracked {
		return 0, false
	}
	i := seriesOf(rd.Accounting, comm)
	if i < 0 || sharesManager(ra.manager, i) {
		return 0, false
	}
	s := &rd.Accounting[i]
	n := len(s.TimesNs)
	if n < 2 {
		return 0, false
	}
	last := s.TimesNs[n-1]
	every := (last - s.TimesNs[0]) / int64(n-1)
	times := rd.Samples.TimesNs
	if last > ep.riseHi || last < satSub(ep.riseLo, accountingLookbackNs) ||
		len(times) == 0 || times[len(times)-1] < satAdd(last, 2*every) {
		return 0, false
	}
	freed = s.Bytes[n-1]
	fall := -ep.excess
	slack := max(fall/4, m.analyses[ri].threshold)
	return freed, freed > 0 && freed >= fall-slack && freed <= fall+slack
}
