package window

import (
	"encoding/hex"
	"hash/maphash"

	"github.com/collectiveattr/collectiveattr/internal/slots"
)

// noParent is the ParentID of a phase span whose path is complete.
var noParent [8]byte

// phaseParents completes, at evaluation, the paths of a rank's buffered
// phase spans whose parent was not in their request: usually it comes in a
// later one, sometimes it came earlier. An SDK exports a span when
// it ends, so a step's forward and backward spans usually leave a request
// or more before the step span that encloses them; the converter walks
// ancestors within one request only and marks the span with the parent it
// could not find (Record.PhaseParentID). Once that parent is
// buffered as a phase span of the same rank and trace, the child's path is
// the parent's path followed by the names the child's own batch gave: what
// the walk would have found with the whole trace in one request
// (contract §3.2). A parent that is not a phase span is never buffered, so a child
// whose missing parent is, say, an unnamed wrapper span keeps its partial
// path; groupbytrace before the processor, or phase.path, covers that.
//
// Memory is reused across evaluations (evalScratch, guarded by evalMu).
type phaseParents struct {
	seed  maphash.Seed
	slots slots.Table // of the ring being completed, by scope id
	// joined remembers recent joins: a job's spans repeat a few paths, and
	// a completed path is kept for the whole window.
	joined [64]joinedPath
}

type joinedPath struct {
	outer, inner, path []string
}

// complete completes the paths of the spans that wait for a parent found
// among spans, and returns how many still wait.
func (pp *phaseParents) complete(spans *ring[phaseSpanEntry]) int {
	pp.index(spans)
	waiting := 0
	for i := range spans.len() {
		if spans.at(i).ParentID == noParent {
			continue
		}
		pp.completeOne(spans, i, 0)
		if spans.at(i).ParentID != noParent {
			waiting++
		}
	}
	return waiting
}

// completeOne puts the path of span i's parent in front of its own, the
// parent completed first, so that a chain of spans that arrived before
// their parents is completed from the top down. Span i then waits for
// whatever its parent still waits for. A chain is followed at most
// MaxPhaseDepth spans up, and a path stops growing past that many
// names (only a parent cycle makes one that long).
func (pp *phaseParents) completeOne(spans *ring[phaseSpanEntry], i, depth int) {
	e := spans.at(i)
	if e.ParentID == noParent || depth >= MaxPhaseDepth {
		return
	}
	p := pp.find(spans, e.TraceID, e.ParentID)
	if p < 0 {
		return
	}
	if p != i {
		pp.completeOne(spans, p, depth+1)
	}
	parent := spans.at(p)
	if p == i || len(parent.Path)+len(e.Path) > MaxPhaseDepth+1 {
		e.ParentID = noParent
		return
	}
	e.Path = pp.join(parent.Path, e.Path)
	e.ParentID = parent.ParentID
}

// index builds the slots over spans. Of two spans with one trace and span
// id, the later is found, as the converter's batch index does.
func (pp *phaseParents) index(spans *ring[phaseSpanEntry]) {
	if pp.seed == (maphash.Seed{}) {
		pp.seed = maphash.MakeSeed()
	}
	pp.slots.Reset(spans.len())
	for i := range spans.len() {
		e := spans.at(i)
		for h := pp.slots.Home(maphash.String(pp.seed, e.ScopeID)); ; h = pp.slots.Next(h) {
			s := pp.slots.S[h]
			if s == 0 {
				pp.slots.S[h] = int32(i + 1)
				break
			}
			if o := spans.at(int(s) - 1); o.ScopeID == e.ScopeID && o.TraceID == e.TraceID {
				pp.slots.S[h] = int32(i + 1)
				break
			}
		}
	}
}

// find returns the ring index of the span of trace and span id, or -1.
func (pp *phaseParents) find(spans *ring[phaseSpanEntry], trace [16]byte, span [8]byte) int {
	var scope [2 * len(noParent)]byte
	hex.Encode(scope[:], span[:])
	for h := pp.slots.Home(maphash.Bytes(pp.seed, scope[:])); ; h = pp.slots.Next(h) {
		s := pp.slots.S[h]
		if s == 0 {
			return -1
		}
		if e := spans.at(int(s) - 1); e.ScopeID == string(scope[:]) && e.TraceID == trace {
			return int(s) - 1
		}
	}
}

// join returns outer followed by inner. Paths are shared and read-only
// (Record.PhaseSpan), so a join is remembered by the identity of
// its two parts: their first element's address and their length.
func (pp *phaseParents) join(outer, inner []string) []string {
	op, ip := firstOf(outer), firstOf(inner)
	h := (maphash.Comparable(pp.seed, op)*31 + maphash.Comparable(pp.seed, ip)) % uint64(len(pp.joined))
	j := &pp.joined[h]
	if firstOf(j.outer) == op && len(j.outer) == len(outer) && firstOf(j.inner) == ip && len(j.inner) == len(inner) {
		return j.path
	}
	path := make([]string, 0, len(outer)+len(inner))
	path = append(append(path, outer...), inner...)
	*j = joinedPath{outer: outer, inner: inner, path: path}
	return path
}

// firstOf is the address of the array under s (nil without one).
func firstOf(s []string) *string {
	if cap(s) == 0 {
		return nil
	}
	return &s[:1][0]
}
