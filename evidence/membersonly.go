package evidence

import (
	"slices"
	"sort"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// membersOnlyConfidence is the confidence of a result the members'
// accounting alone makes for a rank that nothing of its own saw: NCCL says
// the collective held that memory on its members, and a collective's
// buffers are allocated on every member, but neither a sample nor a report
// of the rank measured it, so it stays below a change the rank's own
// reports show (0.9).
const membersOnlyConfidence = 0.85

// membersVerdict is what NCCL's reports on a collective's members say of
// its transient buffers, computed once per collective.
type membersVerdict struct {
	done   bool
	shown  bool  // more members' reports show the buffers than deny them
	growth int64 // the median growth of the members whose reports show them
}

// membersOnly appends to cands (accountingOnly's, in rank order) the
// changes that neither a sample nor a report of their rank could see,
// inside an op whose collective NCCL's reports on other members show
// holding transient buffers (evidence-mode §2.5): the rank's samples
// bracket the op with none inside it (unsampled), the rank's own reports
// cannot tell (none where the change could have been) and do not show it
// either, and more members' reports show the buffers than deny them. Each is one result per (op, rank): collective_confirmed,
// its interval the op's, its bytes the members' median growth, no peak
// sample. The candidates it appends follow cands in rank order.
func (d *decider) membersOnly(results []attribution.Result, cands []accountingCandidate) []accountingCandidate {
	if !(membersOnlyConfidence >= d.cfg.MinConfidence) {
		return cands
	}
	own := len(cands) // accountingOnly's candidates, by rank
	d.collectShown(results, cands)
	if len(d.shown) == 0 {
		return cands
	}
	next := 0 // the first of accountingOnly's candidates of rank ri
	for ri := range d.in.Ranks {
		rd := &d.in.Ranks[ri]
		from := next
		for next < own && cands[next].result.Rank == rd.Rank {
			next++
		}
		if len(rd.Markers) == 0 || rd.Samples.Len() < 2 {
			continue
		}
		for mi := range rd.Markers {
			mk := &rd.Markers[mi]
			if mk.Collective == NoCollective || mk.Approximate || len(d.m.members[mk.Collective]) < 2 {
				continue
			}
			// A change of the rank's whose possible onset spans the op (seen
			// by a sample after it) does not make the op seen: a
			// collective's transient buffers live within its op, so that
			// sample saw something else, and the change is judged on its
			// own; where its result covers the op, the members' result is
			// dropped (placeAccountingOnly).
			v := d.membersVerdictOf(mk.Collective)
			// An op before the rank's first sample (its host's first poll,
			// in a job's first seconds) or after its last (its host's last
			// poll, at the job's end) is as unseen as one between two.
			times := rd.Samples.TimesNs
			unseen := d.unsampled(int32(ri), mk.StartNs, mk.EndNs) || times[0] > mk.EndNs || times[len(times)-1] < mk.StartNs
			if !v.shown || !unseen || d.ownAccountingTells(int32(ri), mk) || opCandidate(cands[from:next], mk) {
				continue
			}
			cands = append(cands, accountingCandidate{result: d.unsampledResult(int32(ri), int32(mi), ReasonAccountingMembersOnly, membersOnlyConfidence, mk.StartNs, mk.EndNs, v.growth, nil),
				coll: mk.Collective, raisedFrom: mk.StartNs, raisedTo: mk.EndNs})
		}
	}
	return cands
}

// ownAccountingTells reports whether rank ri's own reports of marker mk's
// communicator can speak to a change in its op: they show growth there, or
// enough of them lie where it could have been that their silence denies it.
// Untracked accounting (cuMem off) tells nothing.
func (d *decider) ownAccountingTells(ri int32, mk *Marker) bool {
	v := d.m.accountingOf(ri, d.m.opChange(mk), CanonicalCommID(d.in.Collectives[mk.Collective].CommID), nil)
	if !v.present || v.untracked {
		return false
	}
	return v.growth > 0 || v.miss <= accountingMissLimit
}

// opCandidate reports whether cands (one rank's) already hold a result of
// the op of marker mk.
func opCandidate(cands []accountingCandidate, mk *Marker) bool {
	for i := range cands {
		if mt := cands[i].result.MarkerTimesNs; len(mt) == 1 && mt[0] == mk.StartNs {
			return true
		}
	}
	return false
}

// collectShown gathers, per collective, the growth NCCL's reports show on
// members where the member's change was attributed to it: a transient
// result its rank's reports cover, or one they alone made (cands) whose
// first raised report lies inside the op itself, or inside its match
// tolerance where no other op of the manager lies (inOp: where one does,
// it may be that op's, a reduce_scatter ending 20 ms before an all_reduce).
func (d *decider) collectShown(results []attribution.Result, cands []accountingCandidate) {
	d.shown = make(map[int32][]int64)
	var collOf map[*attribution.CollectiveMatch]int32
	for i := range results {
		r := &results[i]
		if r.Collective == nil || r.Kind != attribution.KindTransient || r.NCCLAccountedBytes == nil ||
			!slices.Contains(r.ReasonCodes, ReasonAccountingCovers) {
			continue
		}
		if collOf == nil {
			collOf = make(map[*attribution.CollectiveMatch]int32)
			for c, m := range d.matches {
				if m != nil {
					collOf[m] = int32(c)
				}
			}
		}
		if c, ok := collOf[r.Collective]; ok {
			d.shown[c] = append(d.shown[c], *r.NCCLAccountedBytes)
		}
	}
	for i := range cands {
		if cands[i].inOp {
			d.shown[cands[i].coll] = append(d.shown[cands[i].coll], cands[i].result.ExcessBytes)
		}
	}
}

// membersVerdictOf judges collective c by its members' reports. A member
// shows the buffers when a transient change of its own attributed to c is
// covered by its reports, or its reports alone made a result of the op
// (collectShown); it denies them when its reports over the op's interval
// surely would have shown them and show less than its spike threshold.
// The op, not the member's change: a change whose samples merged the op's
// buffers with another cause's after it is judged by its reports as a
// whole, which says nothing of the op. Growth in the reports around an op
// that no change attributed to it explains counts neither way: it may be a
// neighbouring op's, or a step's.
func (d *decider) membersVerdictOf(c int32) membersVerdict {
	if d.membersVerdicts == nil {
		d.membersVerdicts = make([]membersVerdict, len(d.in.Collectives))
	}
	mv := &d.membersVerdicts[c]
	if mv.done {
		return *mv
	}
	mv.done = true
	growths := d.shown[c]
	if len(growths) == 0 {
		return *mv
	}
	s := d.m.synchronyOf(c)
	comm := CanonicalCommID(d.in.Collectives[c].CommID)
	deny := 0
	for i, ref := range d.m.members[c] {
		mk := &d.in.Ranks[ref.rank].Markers[ref.marker]
		if mk.Approximate {
			continue
		}
		ei := s.episode[i]
		if ei >= 0 && d.m.analyses[ref.rank].episodes[ei].persistent {
			continue // its first use, not this op's transient
		}
		threshold := max(d.m.analyses[ref.rank].threshold, 1)
		v := d.m.accountingOf(ref.rank, d.m.opChange(mk), comm, nil)
		if v.present && !v.untracked && v.growth < threshold && v.miss <= accountingMissLimit {
			deny++
		}
	}
	// Most members sampled while the op's change would have been there must
	// show it: where as many were sampled flat then as show it, its buffers
	// are not on every member (a tensor-parallel group's spike at an op of
	// the world's communicator). Where none was sampled flat then, the
	// members' reports decide alone.
	if flat := d.sampledFlat(c, s); len(growths) > deny && (flat == 0 || s.synced > flat) {
		slices.Sort(growths)
		mv.shown, mv.growth = true, growths[(len(growths)-1)/2]
	}
	return *mv
}

// sampledFlat counts the members of collective c with no change matched to
// it (s) that were sampled only at their baseline while the op's change
// would have been there: from their launch (NCCL allocates a collective's
// buffers when it begins) to their op's end, or past it by as long as the
// members that show the change were seen holding it after theirs (the
// median of them: one whose change merged with a later cause's would
// stretch it). A member sampled only before the launch or after that saw
// nothing of it, and one whose samples then lie in a change of its own not
// matched to the op (one that rose before it: another cause's, merged with
// the op's buffers by sparse sampling) cannot tell whether the buffers were
// on top: neither counts (evidence-mode §2.5).
func (d *decider) sampledFlat(c int32, s *synchrony) int {
	members := d.m.members[c]
	var held []int64 // per member showing a transient: how long past its op's end
	for i, ref := range members {
		if ei := s.episode[i]; ei >= 0 {
			mk := &d.in.Ranks[ref.rank].Markers[ref.marker]
			ra := &d.m.analyses[ref.rank]
			if e := &ra.episodes[ei]; !e.persistent && !mk.Approximate && !d.m.polledPast(mk, ra.interval) {
				held = append(held, max(0, e.fallLo-mk.EndNs))
			}
		}
	}
	past := int64(0)
	if len(held) > 0 {
		slices.Sort(held)
		past = held[(len(held)-1)/2]
	}
	flat := 0
	for i, ref := range members {
		mk := &d.in.Ranks[ref.rank].Markers[ref.marker]
		if s.episode[i] >= 0 || mk.Approximate || d.m.analyses[ref.rank].interval == 0 {
			continue
		}
		times := d.in.Ranks[ref.rank].Samples.TimesNs
		end := satAdd(mk.EndNs, past)
		k, _ := slices.BinarySearch(times, mk.StartNs)
		if k == len(times) || times[k] > end {
			continue // not sampled then
		}
		ra := &d.m.analyses[ref.rank]
		for k < len(times) && times[k] <= end && !inChange(ra.episodes, ra.longest, times[k]) {
			k++
		}
		if k == len(times) || times[k] > end {
			flat++
		}
	}
	return flat
}

// inChange reports whether the sample at t is one of the high samples of a
// change in eps (sorted by riseHi): between a transient's first and last
// high sample, or a step's onset sample. No change lasts longer than
// longest from its first high sample to its last, so only those whose
// first came within longest before t are read, not every earlier one.
func inChange(eps []episode, longest, t int64) bool {
	from := satSub(t, longest)
	for i := sort.Search(len(eps), func(k int) bool { return eps[k].riseHi > t }) - 1; i >= 0 && eps[i].riseHi >= from; i-- {
		if eps[i].fallLo >= t {
			return true
		}
	}
	return false
}
