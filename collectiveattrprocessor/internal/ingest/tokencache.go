package ingest

import "github.com/collectiveattr/collectiveattr/attribution"

// maxCachedText is the longest text tokenCache remembers; longer ones (rare
// as span names, and likely unique) go to the automaton every time.
const maxCachedText = 48

// tokenCache remembers the collective-token match (reference §2.3 S2a) of
// recent texts. Span names, event names and attribute values repeat across
// a job's batches (a few kernels, phases and streams), and a hit (a length
// check and one compare of at most maxCachedText bytes) costs less than the
// automaton's chain of dependent loads per byte. Entries hold a copy of the
// text, so the cache neither allocates nor pins request memory; a colliding
// text simply replaces the entry. The answer is always the automaton's.
type tokenCache struct {
	e [256]tokenEntry
}

type tokenEntry struct {
	n     uint8 // len(text) + 1; 0: empty
	match bool
	text  [maxCachedText]byte
}

func (tc *tokenCache) matches(s string) bool {
	if len(s) < attribution.MinCollectiveTokenLen {
		return false // shorter than any token: stream ids, small numbers
	}
	if len(s) > maxCachedText {
		return attribution.MatchesCollectiveToken(s)
	}
	h := (uint(len(s))*157 + uint(s[0])*31 + uint(s[len(s)/2])*7 + uint(s[len(s)-1])) & uint(len(tc.e)-1)
	e := &tc.e[h]
	if int(e.n) == len(s)+1 && string(e.text[:len(s)]) == s {
		return e.match
	}
	m := attribution.MatchesCollectiveToken(s)
	e.n, e.match = uint8(len(s)+1), m
	copy(e.text[:], s)
	return m
}
