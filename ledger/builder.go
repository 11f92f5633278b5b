package ledger

import (
	"cmp"
	"slices"
	"strings"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Builder makes the ranks of an Input from stormlog records added one at a
// time, in input order. The zero value is not usable: call NewBuilder.
type Builder struct {
	ranks     []rankBuild
	rankIndex map[int64]int
	last      int // index of the previous record's rank, -1 none
}

type rankBuild struct {
	RankInput
	sessions  map[string]int32
	acctIndex map[string]int
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder { return &Builder{rankIndex: map[int64]int{}, last: -1} }

// Add takes one record: a `sample` with device_used_bytes (with or without
// allocator_reserved_bytes) adds a sample; a comm_memory_stats record with
// a communicator and a byte count adds an accounting point, read as
// evidence mode reads it; a collective marker adds its time. Other records
// are ignored.
func (b *Builder) Add(e *telemetry.Event) {
	switch {
	case attribution.IsSample(e):
		b.addSample(e, e.AllocatorReservedBytes.Value, false)
	case e.DeviceUsedBytes.Valid && !e.AllocatorReservedBytes.Valid && isSampleType(e):
		b.addSample(e, 0, true)
	case evidence.IsAccountingType(e.EventType):
		if comm, total, ok := evidence.AccountingOf(e); ok {
			b.rank(e.Rank).addAccounting(comm, e.TimestampNs, total)
		}
	case isMarker(e):
		rb := b.rank(e.Rank)
		rb.MarkersNs = append(rb.MarkersNs, e.TimestampNs)
	}
}

// isMarker tells whether e is a collective marker: it names a collective
// (nccl.comm.id and nccl.seq) or carries a collective token, as evidence
// mode reads markers.
func isMarker(e *telemetry.Event) bool {
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

func (b *Builder) addSample(e *telemetry.Event, reserved int64, missing bool) {
	rb := b.rank(e.Rank)
	s := &rb.Samples
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
		rb.sessions = map[string]int32{s.SessionIDs[0]: 0}
	}
	idx := int32(0)
	if s.Session != nil {
		idx = s.Session[n-1]
	}
	if s.SessionIDs[idx] != e.SessionID {
		var ok bool
		if idx, ok = rb.sessions[e.SessionID]; !ok {
			idx = int32(len(s.SessionIDs))
			s.SessionIDs = append(s.SessionIDs, strings.Clone(e.SessionID))
			rb.sessions[s.SessionIDs[idx]] = idx
		}
	}
	if idx != 0 && s.Session == nil {
		s.Session = make([]int32, n, cap(s.TimesNs))
	}
	if s.Session != nil {
		s.Session = append(s.Session, idx)
	}
}

func (rb *rankBuild) addAccounting(comm string, ts, total int64) {
	if rb.acctIndex == nil {
		rb.acctIndex = map[string]int{}
	}
	i, ok := rb.acctIndex[comm]
	if !ok {
		comm = strings.Clone(comm)
		rb.Accounting = append(rb.Accounting, evidence.AccountingSeries{CommID: comm})
		i = len(rb.Accounting) - 1
		rb.acctIndex[comm] = i
	}
	a := &rb.Accounting[i]
	a.TimesNs = append(a.TimesNs, ts)
	a.Bytes = append(a.Bytes, total)
}

func (b *Builder) rank(r int64) *rankBuild {
	if b.last >= 0 && b.ranks[b.last].Rank == r {
		return &b.ranks[b.last]
	}
	i, ok := b.rankIndex[r]
	if !ok {
		b.ranks = append(b.ranks, rankBuild{RankInput: RankInput{Rank: r}})
		i = len(b.ranks) - 1
		b.rankIndex[r] = i
	}
	b.last = i
	return &b.ranks[i]
}

// Ranks returns the built ranks, ascending, each rank's samples and
// accounting series in time order (ties in input order). The Builder must
// not be used afterwards.
func (b *Builder) Ranks() []RankInput {
	out := make([]RankInput, len(b.ranks))
	for i := range b.ranks {
		ri := b.ranks[i].RankInput
		sortSamples(&ri.Samples)
		for k := range ri.Accounting {
			sortSeries(&ri.Accounting[k])
		}
		slices.Sort(ri.MarkersNs)
		out[i] = ri
	}
	slices.SortFunc(out, func(a, b RankInput) int { return cmp.Compare(a.Rank, b.Rank) })
	return out
}

func sortSamples(s *Samples) {
	if slices.IsSorted(s.TimesNs) {
		return
	}
	order := timeOrder(s.TimesNs)
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

func sortSeries(a *evidence.AccountingSeries) {
	if slices.IsSorted(a.TimesNs) {
		return
	}
	order := timeOrder(a.TimesNs)
	a.TimesNs = permute(a.TimesNs, order)
	a.Bytes = permute(a.Bytes, order)
}

// timeOrder is the stable order of times.
func timeOrder(times []int64) []int32 {
	order := make([]int32, len(times))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(times[a], times[b]) })
	return order
}

func permute[T any](v []T, order []int32) []T {
	out := make([]T, len(v))
	for i, j := range order {
		out[i] = v[j]
	}
	return out
}
