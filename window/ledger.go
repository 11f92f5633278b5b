package window

import (
	"cmp"
	"slices"
	"strings"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/ledger"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// ledgerColumns are one rank's columns of the hidden-memory ledger
// (ledger.RankInput), which only a stream keeps (Stream.KeepLedger): the
// ledger reads a whole file, so they are neither trimmed nor checkpointed.
// The ledger reads records otherwise than the attribution modes: a sample
// without allocator_reserved_bytes is still one of its samples, and it
// keeps NCCL's accounting and the marker times whatever the mode.
type ledgerColumns struct {
	ledger.RankInput
	sessions  map[string]int32
	acctIndex map[string]int
}

// KeepLedger makes the stream keep, beside what its mode buffers, the
// columns the hidden-memory ledger reads (LedgerRanks). Call it before the
// first record.
func (s *Stream) KeepLedger() { s.ledger = true }

// addLedger reads one record as the ledger does: a `sample` with
// device_used_bytes (with or without allocator_reserved_bytes) is a
// sample; a comm_memory_stats record with a communicator and a byte count
// is an accounting point, read as evidence mode reads it; a collective
// marker adds its time. Other records are nothing to it.
func (rb *Rank) addLedger(e *telemetry.Event) {
	switch {
	case attribution.IsSample(e):
		rb.ledgerColumns().addSample(e, e.AllocatorReservedBytes.Value, false)
	case e.DeviceUsedBytes.Valid && !e.AllocatorReservedBytes.Valid && isSampleType(e):
		rb.ledgerColumns().addSample(e, 0, true)
	case evidence.IsAccountingType(e.EventType):
		if comm, total, ok := evidence.AccountingOf(e); ok {
			rb.ledgerColumns().addAccounting(comm, e.TimestampNs, total)
		}
	case isLedgerMarker(e):
		lc := rb.ledgerColumns()
		lc.MarkersNs = append(lc.MarkersNs, e.TimestampNs)
	}
}

func (rb *Rank) ledgerColumns() *ledgerColumns {
	if rb.ledger == nil {
		rb.ledger = &ledgerColumns{}
	}
	return rb.ledger
}

// isLedgerMarker tells whether e is a collective marker to the ledger: its
// metadata map names a collective (nccl.comm.id and nccl.seq) or it
// carries a collective token. A streamed record's metadata stays text (no
// map), so for the CLI only the token counts.
func isLedgerMarker(e *telemetry.Event) bool {
	_, comm := e.Metadata[evidence.KeyCommID]
	_, seq := e.Metadata[evidence.KeySeq]
	return comm && seq || attribution.IsMarker(e)
}

// isSampleType tells whether e's event_type is a sample's, as the
// reference reads it, for a record without allocator_reserved_bytes.
func isSampleType(e *telemetry.Event) bool {
	probe := telemetry.Event{EventType: e.EventType, DeviceUsedBytes: telemetry.Int(0), AllocatorReservedBytes: telemetry.Int(0)}
	return attribution.IsSample(&probe)
}

func (lc *ledgerColumns) addSample(e *telemetry.Event, reserved int64, missing bool) {
	s := &lc.Samples
	n := len(s.TimesNs)
	s.TimesNs = append(s.TimesNs, e.TimestampNs)
	s.UsedBytes = append(s.UsedBytes, e.DeviceUsedBytes.Value)
	s.ReservedBytes = append(s.ReservedBytes, reserved)
	if missing && s.NoReserved == nil {
		s.NoReserved = make([]bool, n, cap(s.TimesNs))
	}
	if s.NoReserved != nil {
		s.NoReserved = append(s.NoReserved, missing)
	}
	if len(s.SessionIDs) == 0 {
		s.SessionIDs = []string{strings.Clone(e.SessionID)}
		lc.sessions = map[string]int32{s.SessionIDs[0]: 0}
	}
	idx := int32(0)
	if s.Session != nil {
		idx = s.Session[n-1]
	}
	if s.SessionIDs[idx] != e.SessionID {
		var ok bool
		if idx, ok = lc.sessions[e.SessionID]; !ok {
			idx = int32(len(s.SessionIDs))
			s.SessionIDs = append(s.SessionIDs, strings.Clone(e.SessionID))
			lc.sessions[s.SessionIDs[idx]] = idx
		}
	}
	if idx != 0 && s.Session == nil {
		s.Session = make([]int32, n, cap(s.TimesNs))
	}
	if s.Session != nil {
		s.Session = append(s.Session, idx)
	}
}

func (lc *ledgerColumns) addAccounting(comm string, ts, total int64) {
	if lc.acctIndex == nil {
		lc.acctIndex = map[string]int{}
	}
	i, ok := lc.acctIndex[comm]
	if !ok {
		comm = strings.Clone(comm)
		lc.Accounting = append(lc.Accounting, evidence.AccountingSeries{CommID: comm})
		i = len(lc.Accounting) - 1
		lc.acctIndex[comm] = i
	}
	a := &lc.Accounting[i]
	a.TimesNs = append(a.TimesNs, ts)
	a.Bytes = append(a.Bytes, total)
}

// LedgerRanks hands the ledger's columns over (KeepLedger): the ranks with
// a sample, an accounting point or a marker, ascending, each rank's
// samples and accounting series in time order (ties in input order) and
// its marker times ascending. The stream must not be used afterwards.
func (s *Stream) LedgerRanks() []ledger.RankInput {
	var out []ledger.RankInput
	for r, rb := range s.job.ranks {
		if rb.ledger == nil {
			continue
		}
		ri := rb.ledger.RankInput
		ri.Rank = r
		sortLedgerSamples(&ri.Samples)
		for k := range ri.Accounting {
			if !slices.IsSorted(ri.Accounting[k].TimesNs) {
				sortAccounting(&ri.Accounting[k])
			}
		}
		slices.Sort(ri.MarkersNs)
		out = append(out, ri)
		rb.ledger = nil
	}
	slices.SortFunc(out, func(a, b ledger.RankInput) int { return cmp.Compare(a.Rank, b.Rank) })
	return out
}

// sortLedgerSamples puts the columns in time order, ties in input order.
func sortLedgerSamples(s *ledger.Samples) {
	if slices.IsSorted(s.TimesNs) {
		return
	}
	order := make([]int32, len(s.TimesNs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(s.TimesNs[a], s.TimesNs[b]) })
	s.TimesNs = permute(s.TimesNs, order)
	s.UsedBytes = permute(s.UsedBytes, order)
	s.ReservedBytes = permute(s.ReservedBytes, order)
	if s.NoReserved != nil {
		s.NoReserved = permute(s.NoReserved, order)
	}
	if s.Session != nil {
		s.Session = permute(s.Session, order)
	}
}

func permute[T any](v []T, order []int32) []T {
	out := make([]T, len(v))
	for i, j := range order {
		out[i] = v[j]
	}
	return out
}
