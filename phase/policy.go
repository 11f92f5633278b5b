package phase

import (
	"slices"
	"strings"
)

// AttributeActive is attribute_active_spans with the deepest_per_thread
// strategy (§3.3): exact scope match, then the origin thread's most recent
// span, then the per-thread heuristic. spans are the active spans in index
// order (order decides ties, as Python's max keeps the first maximum).
func AttributeActive(spans []Span, originThread *int64, originScope string) *Attribution {
	if len(spans) == 0 {
		return nil
	}
	if originScope != "" {
		match, n := -1, 0
		for i := range spans {
			if spans[i].ScopeID == originScope {
				match = i
				n++
			}
		}
		if n == 1 {
			return unique(&spans[match], SourceExact)
		}
	}
	if originThread != nil {
		var onThread []Span
		for _, s := range spans {
			if s.ThreadID == *originThread {
				onThread = append(onThread, s)
			}
		}
		if len(onThread) > 0 {
			return unique(mostRecent(onThread), SourceThreadLocal)
		}
	}

	// Heuristic: per thread (in first-seen order) keep the deepest spans;
	// several distinct paths at that depth make the thread ambiguous.
	var threads []int64
	byThread := make(map[int64][]Span)
	for _, s := range spans {
		if _, seen := byThread[s.ThreadID]; !seen {
			threads = append(threads, s.ThreadID)
		}
		byThread[s.ThreadID] = append(byThread[s.ThreadID], s)
	}
	var matches []*Span
	labels := map[string]struct{}{}
	for _, t := range threads {
		ts := byThread[t]
		depth := 0
		for _, s := range ts {
			depth = max(depth, len(s.Path))
		}
		var deepest []Span
		distinct := map[string]struct{}{}
		for _, s := range ts {
			if len(s.Path) == depth {
				deepest = append(deepest, s)
				distinct[FormatPath(s.Path)] = struct{}{}
			}
		}
		if len(distinct) != 1 {
			for l := range distinct {
				labels[l] = struct{}{}
			}
			continue
		}
		matches = append(matches, mostRecent(deepest))
	}
	if len(labels) == 0 && len(matches) == 1 {
		return unique(matches[0], SourceHeuristic)
	}
	for _, m := range matches {
		labels[FormatPath(m.Path)] = struct{}{}
	}
	paths := make([]string, 0, len(labels))
	for l := range labels {
		paths = append(paths, l)
	}
	slices.Sort(paths)
	a := &Attribution{Resolution: Ambiguous, Paths: paths}
	nonEmpty := 0
	for _, p := range paths {
		if p != "" {
			nonEmpty++
		}
	}
	if nonEmpty > 1 {
		if winner := FormatPath(mostRecent(spans).Path); winner != "" {
			a.Summary = &Summary{PhasePath: winner, Source: SourceHeuristic}
		}
	}
	return a
}

// mostRecent is max by (sequence, scope_id), keeping the first maximum.
func mostRecent(spans []Span) *Span {
	best := &spans[0]
	for i := 1; i < len(spans); i++ {
		s := &spans[i]
		if s.Sequence > best.Sequence || (s.Sequence == best.Sequence && strings.Compare(s.ScopeID, best.ScopeID) > 0) {
			best = s
		}
	}
	return best
}

func unique(s *Span, source string) *Attribution {
	path := FormatPath(s.Path)
	scope, thread, name := s.ScopeID, s.ThreadID, s.ThreadName
	return &Attribution{
		Resolution:   Unique,
		Paths:        []string{path},
		Source:       &source,
		Path:         &path,
		ScopeID:      &scope,
		ThreadID:     &thread,
		ThreadIDBool: s.ThreadIDBool,
		ThreadName:   &name,
	}
}
