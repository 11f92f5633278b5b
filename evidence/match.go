package evidence

import (
	"cmp"
	"slices"
)

// memberRef is one member rank's marker of a collective.
type memberRef struct {
	rank   int32 // index into Input.Ranks
	marker int32 // index into that rank's Markers
}

// synchrony is how a collective's members behaved at their own marker of it.
type synchrony struct {
	done     bool
	observed int // members with enough samples to be judged
	synced   int // of those, members with a change rising at their marker
	strong   int // of those, members whose change clears their threshold on its own
	// unseen counts members left out because no sample of theirs lies in
	// their marker's interval: a transient of the collective cannot show
	// on them (a rank polled every second or more).
	unseen int
	// flat: every synchronized member's baseline is exactly flat.
	flat     bool
	episode  []int32 // per member (collective's members order): episode index or -1
	resolved bool    // every observed member's spike rose at the launch and fell at the end, densely sampled
	// NCCL's accounting on the synchronized members, counted once asked
	// for: members whose reports cover their change, show part of it, or
	// show none of it where they surely would have (accountingMissLimit);
	// and the probability that every member's reports missed it, over the
	// members whose reports show none of it.
	accountingDone                             bool
	accountCovers, accountPartial, accountDeny int
	accountMissAll                             float64
}

// matcher finds the collective a change belongs to and how its members
// behaved. It caches the synchrony of each collective.
type matcher struct {
	in       *Input
	cfg      *Config
	analyses []rankAnalysis
	members  [][]memberRef // per collective
	sync     []synchrony   // per collective
	firstUse [][]bool      // per rank, per marker: first marker of its (comm, op) on that rank
	lastUse  [][]bool      // per rank, per marker: last marker of its communicator on that rank
	maxDur   []int64       // per rank: longest marker
	// rises is, per rank, its episodes' riseHi in their order: the
	// members' changes are searched by it, and in the episodes themselves
	// the search would read a cache line per step.
	rises [][]int64
	// changeAt is, per rank, per marker of a collective, the rank's change
	// at it: found rank by rank while the rank's episodes are at hand,
	// where a collective's members, asked in turn, would each read another
	// rank's.
	changeAt [][]memberChange
	acct     []rankAccounting
	// world is every episode's rise, by time on the job's common time:
	// the ranks' clock offsets (evidence-mode §7.5) are estimated and
	// applied when a bare marker's change is first judged (aligned), the
	// only changes that need them.
	world   []worldRise
	skew    *clockSkew
	aligned bool
}

type worldRise struct {
	t    int64
	rank int32
}

func newMatcher(in *Input, cfg *Config, analyses []rankAnalysis) *matcher {
	m := &matcher{
		in: in, cfg: cfg, analyses: analyses,
		members:  make([][]memberRef, len(in.Collectives)),
		sync:     make([]synchrony, len(in.Collectives)),
		firstUse: make([][]bool, len(in.Ranks)),
		lastUse:  make([][]bool, len(in.Ranks)),
		maxDur:   make([]int64, len(in.Ranks)),
		acct:     make([]rankAccounting, len(in.Ranks)),
		rises:    make([][]int64, len(in.Ranks)),
	}
	nEpisodes := 0
	for ri := range analyses {
		nEpisodes += len(analyses[ri].episodes)
	}
	rises := make([]int64, nEpisodes)
	for ri := range analyses {
		eps := analyses[ri].episodes
		m.rises[ri], rises = rises[:len(eps):len(eps)], rises[len(eps):]
		for i := range eps {
			m.rises[ri][i] = eps[i].riseHi
		}
	}
	// Each collective's (communicator, op) and communicator as small
	// numbers, so that a rank's markers are told apart by index rather
	// than by hashing their names, and each collective's members counted
	// to be listed in one allocation.
	type commOp struct{ comm, op string }
	pairs, comms := map[commOp]int32{}, map[string]int32{}
	pairOf, commOf := make([]int32, len(in.Collectives)), make([]int32, len(in.Collectives))
	for c := range in.Collectives {
		col := &in.Collectives[c]
		key := commOp{col.CommID, col.Op}
		id, ok := pairs[key]
		if !ok {
			id = int32(len(pairs))
			pairs[key] = id
		}
		pairOf[c] = id
		if id, ok = comms[col.CommID]; !ok {
			id = int32(len(comms))
			comms[col.CommID] = id
		}
		commOf[c] = id
	}
	count := make([]int32, len(in.Collectives))
	nMarkers, nMembers := 0, 0
	for ri := range in.Ranks {
		nMarkers += len(in.Ranks[ri].Markers)
		for _, mk := range in.Ranks[ri].Markers {
			if mk.Collective != NoCollective {
				count[mk.Collective]++
				nMembers++
			}
		}
	}
	refs := make([]memberRef, nMembers)
	for c, n := range count {
		if n > 0 {
			m.members[c], refs = refs[:0:n], refs[n:]
		}
	}
	uses := make([]bool, 2*nMarkers)
	seen, seenComm := make([]int32, len(pairs)), make([]int32, len(comms)) // the rank index + 1 that saw each
	for ri := range in.Ranks {
		markers := in.Ranks[ri].Markers
		stamp := int32(ri + 1)
		first := uses[:len(markers):len(markers)]
		last := uses[len(markers) : 2*len(markers) : 2*len(markers)]
		uses = uses[2*len(markers):]
		for mi, mk := range markers {
			m.maxDur[ri] = max(m.maxDur[ri], mk.EndNs-mk.StartNs)
			if mk.Collective == NoCollective {
				continue
			}
			if id := pairOf[mk.Collective]; seen[id] != stamp {
				seen[id] = stamp
				first[mi] = true
			}
			m.members[mk.Collective] = append(m.members[mk.Collective], memberRef{int32(ri), int32(mi)})
		}
		m.firstUse[ri] = first
		for mi := len(markers) - 1; mi >= 0; mi-- {
			if c := markers[mi].Collective; c != NoCollective && seenComm[commOf[c]] != stamp {
				seenComm[commOf[c]] = stamp
				last[mi] = true
			}
		}
		m.lastUse[ri] = last
	}
	changes := make([]memberChange, nMarkers)
	m.changeAt = make([][]memberChange, len(in.Ranks))
	for ri := range in.Ranks {
		markers := in.Ranks[ri].Markers
		m.changeAt[ri], changes = changes[:len(markers):len(markers)], changes[len(markers):]
		for mi := range markers {
			if markers[mi].Collective != NoCollective {
				m.changeAt[ri][mi] = m.changeOf(int32(ri), &markers[mi])
			}
		}
	}
	return m
}

// alignClocks estimates the ranks' clock skew and lists the world's rises
// on the job's common time, once per evaluation: only changes matched to
// bare markers need them.
func (m *matcher) alignClocks() {
	if m.aligned {
		return
	}
	m.aligned = true
	m.skew = estimateSkew(m.in, m.members)
	for ri := range m.analyses {
		for _, ep := range m.analyses[ri].episodes {
			if !ep.weak && !ep.down {
				m.world = append(m.world, worldRise{m.skew.common(int32(ri), ep.riseHi), int32(ri)})
			}
		}
	}
	slices.SortFunc(m.world, func(a, b worldRise) int { return cmp.Compare(a.t, b.t) })
}

// widening is how far a marker's interval is widened before and after it
// when matching.
type widening struct{ before, after int64 }

// tolerance is how far a marker's interval is widened when matching. An
// approximate marker's interval is the latest the op can have run (the
// Inspector's default layout: it ended at or before the record's write
// time, by up to the dump interval), so only its start side gets the
// approximate tolerance; after it, the ordinary match tolerance covers
// sampling as for any marker.
func (m *matcher) tolerance(mk *Marker) widening {
	p := &m.cfg.Evidence
	switch {
	case mk.Approximate:
		return widening{before: p.ApproximateToleranceNs, after: p.MatchToleranceNs}
	case mk.Collective == NoCollective:
		w := max(p.MatchToleranceNs, m.cfg.MarkerWindowNs)
		return widening{w, w}
	}
	return widening{p.MatchToleranceNs, p.MatchToleranceNs}
}

// riseMatches reports whether a change that began in (riseLo, riseHi] can
// have begun during the marker's interval, widened by tol.
func riseMatches(mk *Marker, riseLo, riseHi int64, tol widening) bool {
	return satSub(mk.StartNs, tol.before) <= riseHi && satAdd(mk.EndNs, tol.after) > riseLo
}

// candidates calls fn for each marker of rank ri whose interval matches the
// rise of ep.
func (m *matcher) candidates(ri int32, ep *episode, fn func(mi int32)) {
	markers := m.in.Ranks[ri].Markers
	p := &m.cfg.Evidence
	widest := max(p.ApproximateToleranceNs, p.MatchToleranceNs, m.cfg.MarkerWindowNs)
	hi := firstStartingAt(markers, satAdd(ep.riseHi, widest)+1)
	lowest := satSub(satSub(ep.riseLo, widest), m.maxDur[ri])
	for mi := hi - 1; mi >= 0 && markers[mi].StartNs >= lowest; mi-- {
		mk := &markers[mi]
		if riseMatches(mk, ep.riseLo, ep.riseHi, m.tolerance(mk)) {
			fn(int32(mi))
		}
	}
}

// firstStartingAt is the index of the first of markers (sorted by StartNs)
// that starts at or after t, or len(markers): slices.BinarySearchFunc's,
// without calling a comparison per step (every change of a round searches
// its rank's markers, twice).
func firstStartingAt(markers []Marker, t int64) int {
	lo, hi := 0, len(markers)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if markers[mid].StartNs < t {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// memberEpisode is the index of rank ri's change that rose during marker
// mk (one that clears the threshold on its own when there are several), or
// -1. A rank polled more sparsely than the op lasts shows a transient of
// it only with a high sample while it ran.
func (m *matcher) memberEpisode(ri int32, mk *Marker) int32 {
	eps := m.analyses[ri].episodes
	tol := m.tolerance(mk)
	// A polled rank's rise gap of a second or more overlaps some op
	// whatever caused the change: its transient shows this op only when
	// first seen while the op ran (its buffers freed by the end, within
	// the tolerance), up to polled (evidence-mode §7.6).
	polled := int64(-1)
	if m.polledPast(mk, m.analyses[ri].interval) {
		polled = satAdd(mk.EndNs, tol.after)
	}
	lo := satSub(mk.StartNs, tol.before)
	i, _ := slices.BinarySearch(m.rises[ri], lo)
	found := int32(-1)
	for ; i < len(eps); i++ {
		e := &eps[i]
		if e.riseLo >= satAdd(mk.EndNs, tol.after) {
			break
		}
		if riseMatches(mk, e.riseLo, e.riseHi, tol) && (polled < 0 || e.persistent || e.riseHi >= mk.StartNs && e.riseHi <= polled) {
			if !e.weak {
				return int32(i)
			}
			if found < 0 {
				found = int32(i)
			}
		}
	}
	return found
}

// synchronyOf judges collective c on every member with enough samples. A
// member without a change at its marker counts against the op only where
// a sample of its own would have shown the op's buffers (observable): not
// past its op's end by more than the members that show a transient were
// seen holding it after theirs (the median of those sampled densely
// enough to follow the op; one whose change merged with a later cause's
// would stretch the maximum): NCCL frees an op's buffers as it ends, and a
// sample after that shows nothing of them (evidence-mode §3.2).
func (m *matcher) synchronyOf(c int32) *synchrony {
	s := &m.sync[c]
	if s.done {
		return s
	}
	s.done = true
	members := m.members[c]
	s.episode = make([]int32, len(members))
	s.resolved = true
	s.flat = true
	var held []int64 // per member showing a transient, densely sampled: how long past its op's end
	for i, ref := range members {
		s.episode[i] = -1
		ra := &m.analyses[ref.rank]
		if ra.interval == 0 {
			continue // too few samples to judge this member
		}
		mc := m.changeAt[ref.rank][ref.marker]
		s.episode[i] = mc.episode
		if mc.episode < 0 {
			continue
		}
		mk := &m.in.Ranks[ref.rank].Markers[ref.marker]
		if e := &ra.episodes[mc.episode]; !e.persistent && !mk.Approximate && !m.polledPast(mk, ra.interval) {
			held = append(held, max(0, e.fallLo-mk.EndNs))
		}
	}
	past := int64(-1) // no transient seen: the tolerance's
	if len(held) > 0 {
		slices.Sort(held)
		past = held[(len(held)-1)/2]
	}
	for _, ref := range members {
		ra := &m.analyses[ref.rank]
		if ra.interval == 0 {
			continue
		}
		mc := m.changeAt[ref.rank][ref.marker]
		if mc.episode < 0 {
			s.resolved = false
			mk := &m.in.Ranks[ref.rank].Markers[ref.marker]
			from, to := m.observable(mk, ra.interval)
			if past >= 0 && !mk.Approximate {
				to = min(to, satAdd(mk.EndNs, past))
			}
			if !sampledWithin(m.in.Ranks[ref.rank].Samples.TimesNs, from, to) {
				s.unseen++
				continue
			}
			s.observed++
			continue
		}
		s.observed++
		s.synced++
		s.flat = s.flat && ra.flat
		if mc.strong {
			s.strong++
		}
		if !mc.resolved {
			s.resolved = false
		}
	}
	if s.observed < 2 || s.synced < s.observed {
		s.resolved = false
	}
	return s
}

// memberChange is what a collective's synchrony reads of a member's change
// at its marker, found rank by rank (matcher.changeAt).
type memberChange struct {
	episode int32 // memberEpisode, or -1
	// strong: the change clears its rank's threshold on its own;
	// resolved: it rose at the launch and fell at the end of the op,
	// densely sampled.
	strong, resolved bool
}

// changeOf is rank ri's memberChange at its marker mk.
func (m *matcher) changeOf(ri int32, mk *Marker) memberChange {
	mc := memberChange{episode: m.memberEpisode(ri, mk)}
	if mc.episode < 0 {
		return mc
	}
	ra := &m.analyses[ri]
	e := &ra.episodes[mc.episode]
	mc.strong = !e.weak
	tol, iv := m.cfg.Evidence.MatchToleranceNs, ra.interval
	// A sample places the change up to an interval plus the tolerance from
	// the launch (or the end) and still counts it there. Where the op does
	// not last resolved_min_samples such spans, the rise and fall windows
	// cover most of it, and any co-timed change lasting about as long as
	// the op (a workspace freed before the next step) passes as resolved:
	// the timing does not separate it from NCCL's buffers (evidence-mode §3.4).
	dense := float64(mk.EndNs-mk.StartNs) >= m.cfg.Evidence.ResolvedMinSamples*float64(iv+tol)
	mc.resolved = dense && !e.persistent && !mk.Approximate &&
		e.riseLo >= satSub(mk.StartNs, tol) && e.riseHi <= satAdd(mk.StartNs, tol+iv) &&
		e.fallHi >= satSub(mk.EndNs, tol) && e.fallLo <= satAdd(mk.EndNs, tol) &&
		e.fallHi <= satAdd(mk.EndNs, tol+iv)
	return mc
}

// observable is the interval in which a member's sample would surely have
// shown a transient of its marker mk: from the launch to the op's end,
// widened by the tolerance. NCCL allocates an op's buffers at its launch,
// on the clock that stamps the rank's samples and its markers, so a sample
// before the launch shows nothing of them (evidence-mode §3.2); only an
// approximate marker, whose launch is not known, is widened before it too.
// A member polled more sparsely than the widened interval lasts (DCGM,
// nvidia-smi) samples it by chance; its sample in the widening after the
// end, where NCCL's buffers may be freed, shows nothing of the op either,
// so only one inside the op itself counts (evidence-mode §7.6).
func (m *matcher) observable(mk *Marker, interval int64) (from, to int64) {
	if m.polledPast(mk, interval) {
		return mk.StartNs, mk.EndNs
	}
	w := m.tolerance(mk)
	from = mk.StartNs
	if mk.Approximate {
		from = satSub(mk.StartNs, w.before)
	}
	return from, satAdd(mk.EndNs, w.after)
}

// polledPast reports whether a member sampled every interval samples the
// op of its marker mk only by chance: the interval is longer than the op's
// (known) interval widened by the tolerance, as a host-wide poll at 1 Hz
// or every 5 s is.
func (m *matcher) polledPast(mk *Marker, interval int64) bool {
	w := m.tolerance(mk)
	return mk.EndNs > mk.StartNs && !mk.Approximate && interval > satAdd(mk.EndNs, w.after)-satSub(mk.StartNs, w.before)
}

// sampledWithin reports whether some of times (sorted) lies in [from, to].
func sampledWithin(times []int64, from, to int64) bool {
	i, _ := slices.BinarySearch(times, from)
	return i < len(times) && times[i] <= to
}

// corroborated reports whether enough members show the change for it to
// stand out of their noise: members whose change is only weak count when
// others' are strong, or when many members show it (by chance a weak
// excess comes in a few percent of a rank's marker intervals, four or more
// members at once far more rarely).
//
// On exactly flat baselines a change of a few pages is no noise: when every
// observed member shows it, two members are enough (evidence-mode §7.2).
func (s *synchrony) corroborated() bool {
	return s.strong >= 2 || (s.strong == 1 && s.synced >= 3) || s.synced >= 4 ||
		(s.flat && s.synced >= 2 && s.synced == s.observed)
}

// memberAccounting judges NCCL's accounting of collective c over its
// members: a synchronized one over its own change's window, another over
// the op's interval.
func (m *matcher) memberAccounting(c int32) *synchrony {
	s := m.synchronyOf(c)
	if s.accountingDone {
		return s
	}
	s.accountingDone = true
	s.accountMissAll = 1
	comm := CanonicalCommID(m.in.Collectives[c].CommID)
	for i, ref := range m.members[c] {
		ra := &m.analyses[ref.rank]
		mk := &m.in.Ranks[ref.rank].Markers[ref.marker]
		ei := s.episode[i]
		if ei < 0 || ra.episodes[ei].down {
			if mk.Approximate {
				continue // the op's interval is not known on this member
			}
			// NCCL allocates a collective's buffers on every member: a
			// member whose samples missed the change is judged over the
			// op's own interval, its start and end known to within the
			// match tolerance. So is one whose change there is a fall (its
			// first sample caught a change and saw only its end): NCCL's
			// total over a fall says nothing of growth at the op, and a
			// communicator first reported after it would read as grown
			// from 0 by all it holds.
			v := m.accountingOf(ref.rank, m.opChange(mk), comm, nil)
			switch {
			case !v.present || v.untracked:
			case v.growth >= ra.threshold:
				s.accountPartial++
			default:
				s.accountMissAll *= v.miss
			}
			continue
		}
		ep := &ra.episodes[ei]
		v := m.accountingOf(ref.rank, ep, comm, mk)
		switch {
		case !v.present || v.untracked:
		case v.covers(ep, ra.threshold):
			s.accountCovers++
		case v.growth >= ra.threshold:
			s.accountPartial++
		default:
			s.accountMissAll *= v.miss
			if v.miss <= accountingMissLimit {
				s.accountDeny++
			}
		}
	}
	return s
}

// opChange is a transient change spanning op mk, its start and end known
// to within the match tolerance: the window a member without a sample in
// its op is judged over.
func (m *matcher) opChange(mk *Marker) *episode {
	tol := m.cfg.Evidence.MatchToleranceNs
	op := episode{riseLo: satSub(mk.StartNs, tol), riseHi: satAdd(mk.StartNs, tol)}
	op.fallLo = max(op.riseHi, satSub(mk.EndNs, tol))
	op.fallHi = satAdd(op.fallLo, 2*tol)
	return &op
}

// worldSynchrony counts the distinct ranks with a change rising within
// ±window of t, a time of rank ri's clock (bare markers carry no members to
// judge by), on the job's common time (alignClocks), and of those the
// ranks sampled at least once per window: a rank polled every second or
// more (DCGM, nvidia-smi) cannot place a rise within the window.
func (m *matcher) worldSynchrony(ri int32, t, window int64, stamp []int32, mark int32) (count, dense int) {
	m.alignClocks()
	t = m.skew.common(ri, t)
	lo, _ := slices.BinarySearchFunc(m.world, satSub(t, window), func(w worldRise, x int64) int { return cmp.Compare(w.t, x) })
	for i := lo; i < len(m.world) && m.world[i].t <= satAdd(t, window); i++ {
		r := m.world[i].rank
		if stamp[r] != mark {
			stamp[r] = mark
			count++
			if m.analyses[r].interval <= window {
				dense++
			}
		}
	}
	return count, dense
}
