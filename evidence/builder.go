package evidence

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Metadata keys of the collective identity and of NCCL's memory accounting
// (docs/evidence-mode.md §2).
const (
	KeyCommID          = "nccl.comm.id"
	KeySeq             = "nccl.seq"
	KeyOp              = "nccl.op"
	KeyMessageBytes    = "nccl.message_bytes"
	KeyCommNRanks      = "nccl.comm.nranks"
	KeyCommRanks       = "nccl.comm.ranks"
	KeyPeer            = "nccl.peer"
	KeyDurationNs      = "nccl.duration_ns"
	KeyTimeApproximate = "nccl.time_approximate"
	KeyMemoryTotal     = "nccl.comm.memory.total_bytes"
	// AccountingEventType is the stormlog event_type of NCCL's accounting
	// records.
	AccountingEventType = "comm_memory_stats"
)

// Builder makes an Input from stormlog records added one at a time, in
// input order (a streaming decoder can feed it chunk by chunk). The zero
// value is not usable: call NewBuilder.
type Builder struct {
	ranks       []rankBuild
	rankIndex   map[int64]int32
	lastRank    int32 // index of the rank of the previous record, -1 none
	collectives CollectiveTable
	minTs       int64
	maxWorld    int64
	events      int
	// Skipped counts records that were neither samples, markers nor
	// accounting (step events, malformed accounting), for callers that
	// report it.
	Skipped int
}

type rankBuild struct {
	rank       int64
	host       string
	samples    Samples
	sessions   map[string]int32
	lastSess   int32 // index of the previous sample's session
	markers    []Marker
	accounting []AccountingSeries
	acctIndex  map[string]int32
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{
		rankIndex: map[int64]int32{},
		minTs:     math.MaxInt64,
		lastRank:  -1,
	}
}

// Add takes one record. A sample (as the reference defines it) adds a
// sample; a comm_memory_stats record with a communicator and a byte count
// adds an accounting point; any other record that carries a collective
// identity or a collective token (reference-semantics §2.3 S2) adds a
// marker. Everything else only moves the trace start and the world size.
func (b *Builder) Add(e *telemetry.Event) {
	b.events++
	b.minTs = min(b.minTs, e.TimestampNs)
	b.maxWorld = max(b.maxWorld, e.WorldSize)
	if attribution.IsSample(e) {
		rb := b.rank(e.Rank)
		if rb.host == "" {
			rb.host = e.Host
		}
		s := &rb.samples
		s.TimesNs = append(s.TimesNs, e.TimestampNs)
		s.GapBytes = append(s.GapBytes, attribution.HiddenGap(e.DeviceUsedBytes.Value, e.AllocatorReservedBytes.Value))
		var total int64
		if e.DeviceTotalBytes.Valid && e.DeviceTotalBytes.Value > 0 {
			total = e.DeviceTotalBytes.Value
		}
		s.TotalBytes = append(s.TotalBytes, total)
		rb.addSession(e.SessionID)
		return
	}
	md := readRecordMetadata(e)
	if IsAccountingType(e.EventType) {
		comm, total, ok := accountingPoint(md)
		if !ok {
			b.Skipped++
			return
		}
		b.rank(e.Rank).addAccounting(comm, e.TimestampNs, total)
		return
	}
	m, ok := recordMarker(e.TimestampNs, md, func() bool { return attribution.IsMarker(e) }, &b.collectives)
	if !ok {
		b.Skipped++
		return
	}
	rb := b.rank(e.Rank)
	rb.markers = append(rb.markers, m)
}

// IsAccountingType reports whether a stormlog event_type names NCCL's
// accounting records (comm_memory_stats, as the reference compares event
// types: trimmed, any case).
func IsAccountingType(t string) bool {
	return t == AccountingEventType || strings.EqualFold(telemetry.TrimSpace(t), AccountingEventType)
}

// AccountingOf reads the point an accounting record e carries: its
// communicator and the bytes NCCL reports for it, or UntrackedBytes when the
// record says cuMem is off (nccl.cumem_enabled false); ok is false when
// either is missing or the count is negative. The Builder and the
// processor's buffers both read accounting records with it.
func AccountingOf(e *telemetry.Event) (comm string, total int64, ok bool) {
	return accountingPoint(readRecordMetadata(e))
}

func accountingPoint(md recordMetadata) (comm string, total int64, ok bool) {
	comm, okC := md.comm.AsString()
	total, okT := metadataValueInt(md.total)
	ok = okC && okT && total >= 0
	if on, known := md.cumem.AsBool(); known && !on && ok {
		total = UntrackedBytes
	}
	return comm, total, ok
}

func (b *Builder) rank(r int64) *rankBuild {
	if b.lastRank >= 0 && b.ranks[b.lastRank].rank == r {
		return &b.ranks[b.lastRank]
	}
	i, ok := b.rankIndex[r]
	if !ok {
		b.ranks = append(b.ranks, rankBuild{rank: r})
		i = int32(len(b.ranks) - 1)
		b.rankIndex[r] = i
	}
	b.lastRank = i
	return &b.ranks[i]
}

func (rb *rankBuild) addSession(id string) {
	s := &rb.samples
	n := len(s.TimesNs) - 1 // index of the sample just added
	if len(s.SessionIDs) == 0 {
		s.SessionIDs = append(s.SessionIDs, id)
		rb.sessions = map[string]int32{id: 0}
	}
	idx := rb.lastSess
	if s.SessionIDs[idx] != id {
		var ok bool
		idx, ok = rb.sessions[id]
		if !ok {
			idx = int32(len(s.SessionIDs))
			s.SessionIDs = append(s.SessionIDs, id)
			rb.sessions[id] = idx
		}
		rb.lastSess = idx
	}
	if idx != 0 && s.Session == nil {
		s.Session = make([]int32, n, max(n+1, cap(s.TimesNs)))
	}
	if s.Session != nil {
		s.Session = append(s.Session, idx)
	}
}

func (rb *rankBuild) addAccounting(comm string, ts, total int64) {
	if rb.acctIndex == nil {
		rb.acctIndex = map[string]int32{}
	}
	i, ok := rb.acctIndex[comm]
	if !ok {
		comm = strings.Clone(comm) // see CollectiveTable.intern
		rb.accounting = append(rb.accounting, AccountingSeries{CommID: comm})
		i = int32(len(rb.accounting) - 1)
		rb.acctIndex[comm] = i
	}
	a := &rb.accounting[i]
	a.TimesNs = append(a.TimesNs, ts)
	a.Bytes = append(a.Bytes, total)
}

// Input returns the built input: ranks ascending, each rank's samples in
// time order (ties in input order), markers by start, accounting series in
// time order. Ranks without samples are kept (their markers still count as
// members' markers). The Builder must not be used afterwards.
func (b *Builder) Input() *Input {
	in := &Input{Collectives: b.collectives.List, ExpectedWorldSize: b.maxWorld}
	if b.events > 0 {
		in.TraceStartNs = max(0, b.minTs)
	}
	if in.ExpectedWorldSize <= 0 {
		in.ExpectedWorldSize = int64(max(len(b.ranks), 1))
	}
	in.Ranks = make([]RankData, len(b.ranks))
	for i := range b.ranks {
		rb := &b.ranks[i]
		sortSamples(&rb.samples)
		if !slices.IsSortedFunc(rb.markers, cmpMarker) {
			slices.SortStableFunc(rb.markers, cmpMarker)
		}
		for j := range rb.accounting {
			sortSeries(&rb.accounting[j])
		}
		in.Ranks[i] = RankData{Rank: rb.rank, Host: rb.host, Samples: rb.samples, Markers: rb.markers, Accounting: rb.accounting}
	}
	slices.SortFunc(in.Ranks, func(a, b RankData) int { return cmp.Compare(a.Rank, b.Rank) })
	return in
}

func cmpMarker(a, b Marker) int { return cmp.Compare(a.StartNs, b.StartNs) }

// sortSamples puts the columns in time order, ties in input order.
func sortSamples(s *Samples) {
	if slices.IsSorted(s.TimesNs) {
		return
	}
	order := make([]int32, len(s.TimesNs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(s.TimesNs[a], s.TimesNs[b]) })
	s.TimesNs = permute(s.TimesNs, order)
	s.GapBytes = permute(s.GapBytes, order)
	s.TotalBytes = permute(s.TotalBytes, order)
	if s.Session != nil {
		s.Session = permute(s.Session, order)
	}
}

func sortSeries(a *AccountingSeries) {
	if slices.IsSorted(a.TimesNs) {
		return
	}
	order := make([]int32, len(a.TimesNs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(x, y int32) int { return cmp.Compare(a.TimesNs[x], a.TimesNs[y]) })
	a.TimesNs = permute(a.TimesNs, order)
	a.Bytes = permute(a.Bytes, order)
}

func permute[T any](v []T, order []int32) []T {
	out := make([]T, len(v))
	for i, j := range order {
		out[i] = v[j]
	}
	return out
}

// MetadataInt reads an integral metadata value: a JSON integer
// (json.Number), a Go integer, or a float with an integral value. The
// processor's store reads marker metadata with it too, so both read the
// same records alike.
func MetadataInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		return numberInt(x)
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case float64:
		return floatInt(x)
	}
	return 0, false
}

func floatInt(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}
