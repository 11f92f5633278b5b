package ledger

import (
	"cmp"
	"math"
	"slices"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// contextWindowNs is how much of a session's start sets the rank's context
// level: long enough to hold a few steps at any usual sampling rate, short
// enough to end before a job's later growth (lazily connected buffers, a
// leak). contextMinSamples is the least number of samples the level is the
// median of: at 1 Hz the window is stretched until it has them.
const (
	contextWindowNs   = 5_000_000_000
	contextMinSamples = 5
)

// Ledger reads the rows of a job in time order (ties by rank). The zero
// value is not usable: call New.
type Ledger struct {
	ranks []rankLedger
	// order is a heap of the ranks with samples left, by (next sample
	// time, rank index); the time is kept in the entry to spare a rank's
	// columns a cache miss per comparison.
	order  []cursor
	stats  Stats
	byComm []CommBytes
}

// rankLedger is one rank's state while its rows are read.
type rankLedger struct {
	in       *RankInput
	next     int
	segments []segment
	seg      int
	tracked  bool
	// counted are the indexes of the accounting series that count (shared
	// managers once); cursor[k] is the first report of counted[k] after the
	// last row read.
	counted []int
	cursor  []int
	spans   []span
	// spanNext is the first span not yet active; active holds the indexes
	// of the spans active at the last row read.
	spanNext int
	active   []int
}

// segment is a run of samples of one session (a restart starts another):
// the context level is held per segment.
type segment struct {
	start   int // first sample
	end     int // one past the last sample
	startNs int64
	context int64
	// settled: the level is final, given (RankInput.Contexts) or set over
	// a full context window.
	settled bool
}

// span is an attributed collective change on a rank: a transient spike
// over [lo, hi] of at most limit bytes, or a persistent step of limit bytes
// from lo to the end of its session (hi).
type span struct {
	lo, hi     int64
	persistent bool
	limit      int64
	comm       string
}

// New prepares the ledger of in. It keeps in and reads it as rows are
// read: do not modify it meanwhile.
func New(in *Input) *Ledger {
	l := &Ledger{ranks: make([]rankLedger, len(in.Ranks))}
	byRank := make(map[int64]int, len(in.Ranks))
	for i := range in.Ranks {
		byRank[in.Ranks[i].Rank] = i
	}
	for i := range in.Results {
		r := &in.Results[i]
		ri, ok := byRank[r.Rank]
		if !ok || attribution.ClassificationRank(r.Classification) < attribution.ClassificationRank(attribution.CollectiveConfident) {
			continue
		}
		l.ranks[ri].spans = append(l.ranks[ri].spans, spanOf(r, in.PaddingNs))
	}
	for i := range in.Ranks {
		rl := &l.ranks[i]
		rl.in = &in.Ranks[i]
		l.prepare(rl)
		if rl.in.Samples.Len() > 0 {
			l.order = append(l.order, cursor{t: rl.in.Samples.TimesNs[0], rank: int32(i)})
		}
	}
	for i := len(l.order)/2 - 1; i >= 0; i-- {
		l.down(i)
	}
	return l
}

func spanOf(r *attribution.Result, pad int64) span {
	hi := satSub(r.EndNs(), pad)
	s := span{lo: min(satAdd(r.IntervalStartNs, pad), hi), hi: hi, limit: math.MaxInt64}
	if r.Mode == attribution.ModeEvidence {
		s.limit = max(0, r.ExcessBytes)
	}
	if r.Kind == attribution.KindPersistent {
		s.persistent, s.lo = true, hi
	}
	if r.Collective != nil {
		s.comm = r.Collective.CommID
	}
	return s
}

func (l *Ledger) prepare(rl *rankLedger) {
	in := rl.in
	s := &in.Samples
	rl.tracked = accountingTracked(in.Accounting)
	if rl.tracked {
		l.stats.TrackedRanks++
		shared := sharedSeries(in.Accounting)
		for k := range in.Accounting {
			if shared != nil && shared[k] {
				l.stats.SharedComms++
				continue
			}
			rl.counted = append(rl.counted, k)
		}
		rl.cursor = make([]int, len(rl.counted))
		rl.spans = nil // NCCL's own figures win over attribution
	} else if len(in.Accounting) > 0 {
		l.stats.UntrackedRanks++
	}
	for i := 0; i < s.Len(); {
		j := i + 1
		for j < s.Len() && s.session(j) == s.session(i) {
			j++
		}
		rl.segments = append(rl.segments, segment{start: i, end: j, startNs: s.TimesNs[i]})
		i = j
	}
	// A persistent step holds until its session ends.
	for k := range rl.spans {
		sp := &rl.spans[k]
		if !sp.persistent {
			continue
		}
		sp.hi = sp.lo
		for _, g := range rl.segments {
			if s.TimesNs[g.start] <= sp.lo && sp.lo <= s.TimesNs[g.end-1] {
				sp.hi = s.TimesNs[g.end-1]
				break
			}
		}
	}
	slices.SortStableFunc(rl.spans, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	var vals []int64
	for g := range rl.segments {
		seg := &rl.segments[g]
		if b, ok := knownLevel(in, s, seg); ok {
			seg.context, seg.settled = b, true
			continue
		}
		vals = vals[:0]
		for i := seg.start; i < seg.end; i++ {
			if s.TimesNs[i]-seg.startNs >= contextWindowNs && len(vals) >= contextMinSamples {
				break
			}
			if v, ok := rl.contextValue(i, seg); ok {
				vals = append(vals, v)
			}
		}
		if len(vals) > 0 {
			slices.Sort(vals)
			seg.context = vals[(len(vals)-1)/2]
		}
		seg.settled = len(vals) >= contextMinSamples && s.TimesNs[seg.end-1]-seg.startNs >= contextWindowNs
	}
}

// knownLevel is the level RankInput.Contexts gives seg's session.
func knownLevel(in *RankInput, s *Samples, seg *segment) (int64, bool) {
	if len(in.Contexts) == 0 || len(s.SessionIDs) == 0 {
		return 0, false
	}
	id := s.SessionIDs[s.session(seg.start)]
	for _, c := range in.Contexts {
		if c.Session == id {
			return c.Bytes, true
		}
	}
	return 0, false
}

// Contexts returns the settled context levels of rank index ri of the
// input (given ones included), one per session, for the caller's next
// ledger of the same rank (RankInput.Contexts).
func (l *Ledger) Contexts(ri int) []SessionLevel {
	rl := &l.ranks[ri]
	s := &rl.in.Samples
	var out []SessionLevel
	for _, g := range rl.segments {
		if !g.settled || len(s.SessionIDs) == 0 {
			continue
		}
		id := s.SessionIDs[s.session(g.start)]
		if !slices.ContainsFunc(out, func(c SessionLevel) bool { return c.Session == id }) {
			out = append(out, SessionLevel{Session: id, Bytes: g.context})
		}
	}
	return out
}

// contextValue is sample i's hidden memory less what NCCL holds at it, for
// the context level; ok is false for a sample that cannot tell (no
// allocator reservation, negative hidden, no report yet of tracked
// accounting, or accounting above hidden).
func (rl *rankLedger) contextValue(i int, seg *segment) (int64, bool) {
	s := &rl.in.Samples
	if s.noReserved(i) {
		return 0, false
	}
	hidden := s.UsedBytes[i] - s.ReservedBytes[i]
	if hidden < 0 {
		return 0, false
	}
	t := s.TimesNs[i]
	if rl.tracked {
		var nccl int64
		seen := false
		for _, k := range rl.counted {
			a := &rl.in.Accounting[k]
			j, found := slices.BinarySearch(a.TimesNs, t)
			if found {
				for j+1 < len(a.TimesNs) && a.TimesNs[j+1] == t {
					j++
				}
			} else {
				j--
			}
			if j >= 0 && a.TimesNs[j] >= seg.startNs {
				nccl += a.Bytes[j]
				seen = true
			}
		}
		v := hidden - nccl
		return v, seen && v >= 0
	}
	for k := range rl.spans {
		if sp := &rl.spans[k]; sp.persistent && sp.lo <= t && t <= sp.hi {
			hidden -= sp.limit
		}
	}
	return hidden, true
}

// Stats returns the counts of the rows read so far (and of the ranks).
func (l *Ledger) Stats() Stats { return l.stats }

// Next fills row with the next row in time order (ties by rank) and
// reports whether there was one.
func (l *Ledger) Next(row *Row) bool {
	if len(l.order) == 0 {
		return false
	}
	rl := &l.ranks[l.order[0].rank]
	l.fill(rl, row)
	rl.next++
	if rl.next == rl.in.Samples.Len() {
		last := len(l.order) - 1
		l.order[0] = l.order[last]
		l.order = l.order[:last]
	} else {
		l.order[0].t = rl.in.Samples.TimesNs[rl.next]
	}
	if len(l.order) > 0 {
		l.down(0)
	}
	l.stats.count(row)
	return true
}

// NextOf fills row with the next row of rank index ri of the input (in
// the rank's time order) and reports whether there was one. Read a ledger
// rank by rank with NextOf or in time order with Next, not both.
func (l *Ledger) NextOf(ri int, row *Row) bool {
	rl := &l.ranks[ri]
	if rl.next >= rl.in.Samples.Len() {
		return false
	}
	l.fill(rl, row)
	rl.next++
	l.stats.count(row)
	return true
}

// SeekOf moves rank index ri's next row (NextOf) forward to its first
// sample at or after t: a caller that needs only the rank's latest rows
// skips the cost of the others. It never moves backwards.
func (l *Ledger) SeekOf(ri int, t int64) {
	rl := &l.ranks[ri]
	times := rl.in.Samples.TimesNs
	i, _ := slices.BinarySearch(times, t)
	if i <= rl.next {
		return
	}
	rl.next = i
	for k, ai := range rl.counted {
		a := &rl.in.Accounting[ai]
		c, _ := slices.BinarySearch(a.TimesNs, times[i-1])
		rl.cursor[k] = max(rl.cursor[k], c)
	}
}

func (l *Ledger) fill(rl *rankLedger, row *Row) {
	s := &rl.in.Samples
	i := rl.next
	for rl.segments[rl.seg].end <= i {
		rl.seg++
	}
	seg := &rl.segments[rl.seg]
	t := s.TimesNs[i]
	*row = Row{Rank: rl.in.Rank, TimestampNs: t, DeviceUsedBytes: s.UsedBytes[i], ContextBytes: seg.context}
	if s.noReserved(i) {
		row.Flags |= FlagNoReserved
	} else {
		row.AllocatorReservedBytes = s.ReservedBytes[i]
	}
	row.HiddenBytes = row.DeviceUsedBytes - row.AllocatorReservedBytes
	if row.HiddenBytes < 0 {
		row.Flags |= FlagNegativeHidden
	}
	l.byComm = l.byComm[:0]
	if rl.tracked {
		l.accounted(rl, seg, t, row)
	} else {
		l.attributed(rl, t, row)
	}
	row.ByComm = l.byComm
	row.UnexplainedBytes = row.HiddenBytes - row.NCCLBytes - row.ContextBytes
}

// accounted sums the latest report at or before t of every counted
// communicator that reported since the session began.
func (l *Ledger) accounted(rl *rankLedger, seg *segment, t int64, row *Row) {
	for k, ai := range rl.counted {
		a := &rl.in.Accounting[ai]
		c := rl.cursor[k]
		for c < len(a.TimesNs) && a.TimesNs[c] <= t {
			c++
		}
		rl.cursor[k] = c
		if c == 0 || a.TimesNs[c-1] < seg.startNs {
			continue
		}
		b := a.Bytes[c-1]
		row.NCCLBytes += b
		row.NCCLSource = SourceAccounting
		l.byComm = append(l.byComm, CommBytes{CommID: a.CommID, Bytes: b})
	}
	if row.NCCLSource == SourceAccounting && row.NCCLBytes > row.HiddenBytes {
		row.Flags |= FlagAccountingAboveHidden
	}
}

// attributed counts the attributed changes active at t: a persistent step
// its height, a transient spike the sample's excess over the context and
// the steps, up to the spike's own excess (the rest of the sample's excess
// is unexplained).
func (l *Ledger) attributed(rl *rankLedger, t int64, row *Row) {
	for rl.spanNext < len(rl.spans) && rl.spans[rl.spanNext].lo <= t {
		rl.active = append(rl.active, rl.spanNext)
		rl.spanNext++
	}
	rl.active = slices.DeleteFunc(rl.active, func(k int) bool { return rl.spans[k].hi < t })
	if len(rl.active) == 0 {
		return
	}
	row.NCCLSource = SourceAttributed
	var steps int64
	for _, k := range rl.active {
		if sp := &rl.spans[k]; sp.persistent {
			steps = satAdd(steps, sp.limit)
			l.addComm(sp.comm, sp.limit)
		}
	}
	row.NCCLBytes = steps
	excess := row.HiddenBytes - row.ContextBytes - steps
	for _, k := range rl.active {
		sp := &rl.spans[k]
		if sp.persistent {
			continue
		}
		b := min(max(excess, 0), sp.limit)
		excess -= b
		row.NCCLBytes += b
		l.addComm(sp.comm, b)
	}
}

// addComm adds b bytes to communicator comm's part (none when unknown).
func (l *Ledger) addComm(comm string, b int64) {
	if comm == "" || b == 0 {
		return
	}
	for i := range l.byComm {
		if l.byComm[i].CommID == comm {
			l.byComm[i].Bytes += b
			return
		}
	}
	l.byComm = append(l.byComm, CommBytes{CommID: comm, Bytes: b})
}

// cursor is a rank's place in the heap: its next sample's time.
type cursor struct {
	t    int64
	rank int32
}

func less(a, b cursor) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.rank < b.rank
}

func (l *Ledger) down(i int) {
	n := len(l.order)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && less(l.order[c+1], l.order[c]) {
			c++
		}
		if !less(l.order[c], l.order[i]) {
			return
		}
		l.order[i], l.order[c] = l.order[c], l.order[i]
		i = c
	}
}

func satAdd(a, b int64) int64 {
	if s := a + b; (s > a) == (b > 0) {
		return s
	}
	if b > 0 {
		return math.MaxInt64
	}
	return math.MinInt64
}

func satSub(a, b int64) int64 {
	if b == math.MinInt64 {
		return satAdd(satAdd(a, math.MaxInt64), 1)
	}
	return satAdd(a, -b)
}
