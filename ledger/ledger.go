package ledger

import (
	"cmp"
	"math"
	"slices"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
)

// contextWindowNs is how much of a session's start sets the rank's context
// level: long enough to hold a few steps at any usual sampling rate, short
// enough to end before a job's later growth (lazily connected buffers, a
// leak). contextMinSamples is the least number of samples the level is the
// median of: at 1 Hz the window is stretched until it has them.
const (
	contextWindowNs   = 5_000_000_000
	contextMinSamples = 5
	// preMarkerMinSamples is the least number of samples before a
	// session's first collective marker whose median is its context level:
	// that is the rank's memory before any NCCL activity, where the first
	// seconds may already hold the buffers NCCL connects at a first use
	// (a job's first step often starts within a second of its first
	// sample, so one sample is enough).
	preMarkerMinSamples = 1
)

// A sample reads each communicator's report nearest to it in time: the
// latest at or before it, or the first after it when that is nearer.
// Reports come at a steady cadence for every live communicator, which
// bounds both: a report counts after it for at most staleReports of the
// series' usual intervals (its median; never less than staleMinNs), since
// a communicator that stops reporting was destroyed (an abort, a destroy at
// a restart) and its memory freed; and before it for at most one interval,
// since a communicator first reported then existed that long before.
const (
	staleReports = 5
	staleMinNs   = 1_000_000_000
)

// Ledger reads the rows of a job in time order (ties by rank). The zero
// value is not usable: call New.
type Ledger struct {
	ranks []rankLedger
	// order is a heap of the ranks with samples left, by (next sample
	// time, rank index); the time is kept in the entry to spare a rank's
	// columns a cache miss per comparison.
	order   []cursor
	stats   Stats
	byComm  []CommBytes
	pending []pendingReport
	// byRank is each rank's index in the input.
	byRank map[int64]int
	// gaps is reportInterval's memory.
	gaps []int64
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
	// intervalNs[k] is counted[k]'s usual report interval, staleNs[k]
	// how old its latest report may be to count.
	intervalNs, staleNs []int64
	spans               []span
	// spanNext is the first span not yet active; active holds the indexes
	// of the spans active at the last row read.
	spanNext int
	active   []int
	// activeEnd is the earliest end of the active spans: no row before it
	// drops one.
	activeEnd int64
}

// segment is a run of samples of one session (a restart starts another):
// the context level is held per segment.
type segment struct {
	start   int // first sample
	end     int // one past the last sample
	startNs int64
	// reportsFromNs is the earliest accounting report of the segment's
	// process: after a restart, its first sample (the reports before it are
	// the previous process's); the rank's first segment has no bound.
	reportsFromNs int64
	context       int64
	// settled: the level is final, given (RankInput.Contexts) or set over
	// a full context window.
	settled bool
}

// span is an attributed collective change on a rank: a transient spike
// over [lo, hi] of at most limit bytes, or a persistent step of limit bytes
// (negative: a release) from lo to the end of its session (hi).
type span struct {
	lo, hi     int64
	persistent bool
	limit      int64
	comm       string
}

// New prepares the ledger of in. It keeps in and reads it as rows are
// read: do not modify it meanwhile.
func New(in *Input) *Ledger {
	l := &Ledger{}
	l.Reset(in)
	return l
}

// Reset prepares l as New prepares a ledger of in, reusing the memory of
// l's last input: a caller that reads a job's ledger at every evaluation
// keeps one Ledger.
func (l *Ledger) Reset(in *Input) {
	if cap(l.ranks) < len(in.Ranks) {
		l.ranks = append(l.ranks[:cap(l.ranks)], make([]rankLedger, len(in.Ranks)-cap(l.ranks))...)
	}
	l.ranks = l.ranks[:len(in.Ranks)]
	for i := range l.ranks {
		l.ranks[i].reset(&in.Ranks[i])
	}
	l.order, l.stats = l.order[:0], Stats{}
	if l.byRank == nil {
		l.byRank = make(map[int64]int, len(in.Ranks))
	}
	clear(l.byRank)
	for i := range in.Ranks {
		l.byRank[in.Ranks[i].Rank] = i
	}
	// The results come by rank: each rank is looked up once per run.
	lastRank, ri, ok := int64(0), 0, false
	for i := range in.Results {
		r := &in.Results[i]
		if i == 0 || r.Rank != lastRank {
			lastRank = r.Rank
			ri, ok = l.byRank[r.Rank]
		}
		if !ok || !countsAsNCCL(r) {
			continue
		}
		l.ranks[ri].spans = append(l.ranks[ri].spans, spanOf(r, in.PaddingNs))
	}
	for i := range in.Ranks {
		rl := &l.ranks[i]
		l.prepare(rl)
		if rl.in.Samples.Len() > 0 {
			l.order = append(l.order, cursor{t: rl.in.Samples.TimesNs[0], rank: int32(i)})
		}
	}
	for i := len(l.order)/2 - 1; i >= 0; i-- {
		l.down(i)
	}
}

// reset empties rl for rank in, keeping its buffers.
func (rl *rankLedger) reset(in *RankInput) {
	*rl = rankLedger{in: in, segments: rl.segments[:0], counted: rl.counted[:0], cursor: rl.cursor[:0],
		intervalNs: rl.intervalNs[:0], staleNs: rl.staleNs[:0], spans: rl.spans[:0], active: rl.active[:0],
		activeEnd: math.MaxInt64}
}

// countsAsNCCL reports whether a result's change counts as NCCL's memory:
// confident or confirmed, or a persistent step that is likely. A likely
// transient spike is left unexplained: by the honesty rule (evidence-mode
// §3) the data could not tell it from a non-collective spike co-timed with
// the collective on its members, and such spikes are common (activations,
// workspaces). A step that rises on the members at a collective and stays
// is NCCL connecting buffers; leaving it unexplained would make it a leak
// for the rest of the run.
func countsAsNCCL(r *attribution.Result) bool {
	rank := attribution.ClassificationRank(r.Classification)
	return rank >= attribution.ClassificationRank(attribution.CollectiveConfident) ||
		rank == attribution.ClassificationRank(attribution.CollectiveLikely) && r.Kind == attribution.KindPersistent
}

func spanOf(r *attribution.Result, pad int64) span {
	hi := satSub(r.EndNs(), pad)
	s := span{lo: min(satAdd(r.IntervalStartNs, pad), hi), hi: hi, limit: math.MaxInt64}
	if r.Mode == attribution.ModeEvidence {
		s.limit = max(0, r.ExcessBytes)
	}
	if r.Kind == attribution.KindPersistent {
		// A step down (comm_released: NCCL freed a communicator's
		// buffers) lowers NCCL's part by its height, below 0 when the
		// buffers were held since before the context level was set.
		s.persistent, s.lo, s.limit = true, hi, r.ExcessBytes
	}
	if r.Collective != nil {
		s.comm = r.Collective.CommID
	}
	return s
}

func (l *Ledger) prepare(rl *rankLedger) {
	in := rl.in
	s := &in.Samples
	// What NCCL's accounting covers is the evidence engine's judgement
	// (evidence-mode §2.3): a rank whose totals never move (cuMem off) is not
	// tracked, and communicators sharing a memory manager count once.
	rl.tracked = evidence.AccountingTracked(in.Accounting)
	if rl.tracked {
		l.stats.TrackedRanks++
		for k, m := range evidence.AccountingManagers(in.Accounting) {
			if m != k {
				l.stats.SharedComms++
				continue
			}
			rl.counted = append(rl.counted, k)
		}
		rl.cursor = resize(rl.cursor, len(rl.counted))
		clear(rl.cursor)
		rl.intervalNs = resize(rl.intervalNs, len(rl.counted))
		rl.staleNs = resize(rl.staleNs, len(rl.counted))
		for k, ai := range rl.counted {
			times := in.Accounting[ai].TimesNs
			l.gaps = resize(l.gaps, max(0, len(times)-1))
			rl.intervalNs[k] = reportInterval(times, l.gaps)
			rl.staleNs[k] = max(staleMinNs, staleReports*rl.intervalNs[k])
		}
		rl.spans = rl.spans[:0] // NCCL's own figures win over attribution
	} else if len(in.Accounting) > 0 {
		l.stats.UntrackedRanks++
	}
	for i := 0; i < s.Len(); {
		j := s.Len()
		if s.Session != nil {
			j = i + 1
			for j < s.Len() && s.Session[j] == s.Session[i] {
				j++
			}
		}
		from := int64(math.MinInt64)
		if i > 0 {
			from = s.TimesNs[i]
		}
		rl.segments = append(rl.segments, segment{start: i, end: j, startNs: s.TimesNs[i], reportsFromNs: from})
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
		if level, ok := rl.preMarkerLevel(seg, vals[:0]); ok {
			seg.context, seg.settled = level, true
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

// reportInterval is a series' usual report interval: the median of its
// intervals (staleMinNs/staleReports with fewer than two reports),
// computed in gaps (len(times)-1 long).
func reportInterval(times []int64, gaps []int64) int64 {
	if len(times) < 2 {
		return staleMinNs / staleReports
	}
	for i := range gaps {
		gaps[i] = times[i+1] - times[i]
	}
	return lowerMedian(gaps)
}

// reports are the reports of counted communicator k that may hold for a
// sample at t whose process reports from fromNs on, c being its first
// report after t: the latest at or before t and the first after it, each
// within its bound (okB, okA).
func (rl *rankLedger) reports(k, c int, t, fromNs int64) (before, after int64, okB, okA bool) {
	a := &rl.in.Accounting[rl.counted[k]]
	if c > 0 && a.TimesNs[c-1] >= fromNs && t-a.TimesNs[c-1] <= rl.staleNs[k] {
		before, okB = a.Bytes[c-1], true
	}
	if c < len(a.TimesNs) && a.TimesNs[c]-t <= rl.intervalNs[k] {
		after, okA = a.Bytes[c], true
	}
	return before, after, okB, okA
}

// report is the nearer in time of reports' two (a tie: the one before);
// ok is false when neither counts.
func (rl *rankLedger) report(k, c int, t, fromNs int64) (int64, bool) {
	before, after, okB, okA := rl.reports(k, c, t, fromNs)
	times := rl.in.Accounting[rl.counted[k]].TimesNs
	switch {
	case okA && (!okB || times[c]-t < t-times[c-1]):
		return after, true
	case okB:
		return before, true
	}
	return 0, false
}

// preMarkerLevel is the median of seg's usable samples before its first
// collective marker, when there are preMarkerMinSamples of them.
func (rl *rankLedger) preMarkerLevel(seg *segment, vals []int64) (int64, bool) {
	markers := rl.in.MarkersNs
	if len(markers) == 0 {
		return 0, false
	}
	m, _ := slices.BinarySearch(markers, seg.startNs)
	first := int64(math.MaxInt64)
	if m < len(markers) {
		first = markers[m]
	}
	s := &rl.in.Samples
	for i := seg.start; i < seg.end && s.TimesNs[i] < first; i++ {
		if v, ok := rl.contextValue(i, seg); ok {
			vals = append(vals, v)
		}
	}
	if len(vals) < preMarkerMinSamples || first == math.MaxInt64 {
		return 0, false
	}
	slices.Sort(vals)
	return vals[(len(vals)-1)/2], true
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
		for k, ai := range rl.counted {
			times := rl.in.Accounting[ai].TimesNs
			c, _ := slices.BinarySearch(times, t+1)
			if b, ok := rl.report(k, c, t, seg.reportsFromNs); ok {
				nccl += b
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

// ReadOf reads the rows of rank index ri of the input from its next row
// on (SeekOf), as NextOf reads them, into g (GrowthDetector.Add), and
// fills last with the last of them; false when there is none. A caller
// that needs only a rank's latest rows' growth and its last row spares
// the copy of every row.
func (l *Ledger) ReadOf(ri int, g *GrowthDetector, last *Row) bool {
	rl := &l.ranks[ri]
	n := rl.in.Samples.Len()
	if rl.next >= n {
		return false
	}
	var row Row
	for rl.next < n {
		if l.readQuiet(rl, g, n) > 0 {
			continue
		}
		l.fill(rl, &row)
		l.stats.count(&row)
		g.add(row.TimestampNs, row.UnexplainedBytes)
		rl.next++
	}
	*last = row
	return true
}

// readQuiet reads into g the run of rows of rl from its next one on that
// are quiet (but not its last of n, which ReadOf fills), in one segment,
// and returns how many: each row is its hidden memory less its context
// level, as fill makes it. While no accounting is tracked and no
// attributed change is active, every row before the next change begins
// is quiet, so the run is found once rather than row by row.
func (l *Ledger) readQuiet(rl *rankLedger, g *GrowthDetector, n int) int {
	s := &rl.in.Samples
	from := rl.next
	if from >= n-1 || !rl.quiet(s.TimesNs[from]) {
		return 0
	}
	for rl.segments[rl.seg].end <= from {
		rl.seg++
	}
	to := min(n-1, rl.segments[rl.seg].end)
	if rl.spanNext < len(rl.spans) {
		// quiet(t) holds while t < the next span's lo.
		lo := rl.spans[rl.spanNext].lo
		k, _ := slices.BinarySearch(s.TimesNs[from:to], lo)
		to = from + k
	}
	context := rl.segments[rl.seg].context
	// The run's times as they are, and its values written in place.
	g.times = append(g.times, s.TimesNs[from:to]...)
	at := len(g.values)
	g.values = slices.Grow(g.values, to-from)[:at+to-from]
	values := g.values[at:]
	for k := range values {
		hidden, flags := s.hidden(from + k)
		l.stats.countFlags(flags)
		values[k] = hidden - context
	}
	rl.next = to
	return to - from
}

// quiet reports whether NCCL holds nothing at t on rank rl for certain: it
// reports no tracked accounting, and no attributed change is active at t
// or begins by then.
func (rl *rankLedger) quiet(t int64) bool {
	return !rl.tracked && len(rl.active) == 0 && (rl.spanNext == len(rl.spans) || rl.spans[rl.spanNext].lo > t)
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
	row.HiddenBytes, row.Flags = s.hidden(i)
	if row.Flags&FlagNoReserved == 0 {
		row.AllocatorReservedBytes = s.ReservedBytes[i]
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

// accounted sums, over the counted communicators, the report that holds at
// t. Where the reports just before and just after t differ (NCCL's memory
// changed between them), the sample's own hidden memory tells which of the
// two it saw: the one that leaves the least unexplained. A sample without a
// usable hidden figure takes the nearer report.
func (l *Ledger) accounted(rl *rankLedger, seg *segment, t int64, row *Row) {
	resolve := row.Flags&(FlagNoReserved|FlagNegativeHidden) == 0
	l.pending = l.pending[:0]
	for k, ai := range rl.counted {
		a := &rl.in.Accounting[ai]
		c := rl.cursor[k]
		for c < len(a.TimesNs) && a.TimesNs[c] <= t {
			c++
		}
		rl.cursor[k] = c
		before, after, okB, okA := rl.reports(k, c, t, seg.reportsFromNs)
		var b int64
		switch {
		case okB && okA && before != after && resolve:
			l.pending = append(l.pending, pendingReport{comm: len(l.byComm), before: before, after: after})
		case okB || okA:
			b, _ = rl.report(k, c, t, seg.reportsFromNs)
		default:
			continue
		}
		row.NCCLBytes += b
		row.NCCLSource = SourceAccounting
		l.byComm = append(l.byComm, CommBytes{CommID: a.CommID, Bytes: b})
	}
	for _, p := range l.pending {
		rest := row.HiddenBytes - row.ContextBytes - row.NCCLBytes
		b := p.after
		if absDiff(rest, p.before) <= absDiff(rest, p.after) {
			b = p.before
		}
		row.NCCLBytes += b
		l.byComm[p.comm].Bytes = b
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
		rl.activeEnd = min(rl.activeEnd, rl.spans[rl.spanNext].hi)
		rl.spanNext++
	}
	if len(rl.active) == 0 {
		return
	}
	if rl.activeEnd < t {
		rl.active = slices.DeleteFunc(rl.active, func(k int) bool { return rl.spans[k].hi < t })
		rl.activeEnd = math.MaxInt64
		for _, k := range rl.active {
			rl.activeEnd = min(rl.activeEnd, rl.spans[k].hi)
		}
		if len(rl.active) == 0 {
			return
		}
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

// pendingReport is a communicator whose reports around a sample differ:
// its entry in byComm and the two candidates.
type pendingReport struct {
	comm          int
	before, after int64
}

// resize returns s with length n, its values unspecified.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func absDiff(a, b int64) uint64 {
	if a > b {
		return uint64(a) - uint64(b)
	}
	return uint64(b) - uint64(a)
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
