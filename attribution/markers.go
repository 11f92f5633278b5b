package attribution

import (
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// collapsedTokens are the collective tokens after removing underscores. The
// reference tests `token in normalized or token_without_underscores in
// collapsed` for each of its eleven tokens; the first test implies the
// second, so matching these eight against the collapsed text is equivalent.
var collapsedTokens = []string{
	"nccl", "collective", "communication", "allreduce", "allgather",
	"reducescatter", "broadcast", "barrier",
}

// Token matching runs every event of every evaluation, so it is one pass of
// an Aho–Corasick automaton over the collapsed text instead of eight
// substring searches. Symbols: 0–25 letters (either case), 26 any other byte.
const (
	symOther = 26
	symSkip  = 255 // '-' and '_' vanish in the collapsed text
)

var (
	symbolOf    [256]uint8
	tokenDFA    [][27]uint8
	tokenAccept []bool
)

func init() {
	for i := range symbolOf {
		symbolOf[i] = symOther
	}
	for c := 'a'; c <= 'z'; c++ {
		symbolOf[c] = uint8(c - 'a')
		symbolOf[c-'a'+'A'] = uint8(c - 'a')
	}
	symbolOf['-'], symbolOf['_'] = symSkip, symSkip

	// Trie, then BFS for failure links, folded into a full transition table.
	tokenDFA = [][27]uint8{{}}
	tokenAccept = []bool{false}
	for _, t := range collapsedTokens {
		st := 0
		for i := 0; i < len(t); i++ {
			sym := symbolOf[t[i]]
			if tokenDFA[st][sym] == 0 {
				tokenDFA = append(tokenDFA, [27]uint8{})
				tokenAccept = append(tokenAccept, false)
				tokenDFA[st][sym] = uint8(len(tokenDFA) - 1)
			}
			st = int(tokenDFA[st][sym])
		}
		tokenAccept[st] = true
	}
	fail := make([]uint8, len(tokenDFA))
	var queue []uint8
	for sym := range 27 {
		if next := tokenDFA[0][sym]; next != 0 {
			queue = append(queue, next)
		}
	}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		tokenAccept[st] = tokenAccept[st] || tokenAccept[fail[st]]
		for sym := range 27 {
			next := tokenDFA[st][sym]
			if next != 0 {
				fail[next] = tokenDFA[fail[st]][sym]
				queue = append(queue, next)
			} else {
				tokenDFA[st][sym] = tokenDFA[fail[st]][sym]
			}
		}
	}
}

// MinCollectiveTokenLen is the length of the shortest collective token
// ("nccl"): a shorter text never matches.
const MinCollectiveTokenLen = 4

// MatchesCollectiveToken is the reference's token match (§2.3 S2a) on one
// text fragment: lower-case, drop '-' and '_', then plain substring search
// for nccl, collective, communication, allreduce, allgather, reducescatter,
// broadcast or barrier. "All-Reduce", "ncclKernel" and "Broadcasting" match;
// "all reduce" (space) does not.
//
// Only ASCII letters can form a token: no non-ASCII character lower-cases
// (in Python) to a token letter other than U+0130, whose lower form "i̇"
// carries a combining dot that breaks any token. Non-ASCII bytes therefore
// act as separators, which keeps this exact without Unicode case mapping.
func MatchesCollectiveToken(s string) bool {
	if len(s) < MinCollectiveTokenLen {
		return false // a token needs that many letters
	}
	st := uint8(0)
	for i := 0; i < len(s); i++ {
		sym := symbolOf[s[i]]
		if sym == symSkip {
			continue
		}
		st = tokenDFA[st][sym]
		if tokenAccept[st] {
			return true
		}
	}
	return false
}

// IsMarker reports whether an event is a collective marker (§2.3 S2): its
// event_type, its non-empty context, or any string value nested anywhere in
// its metadata (object keys ignored) matches a collective token. Samples can
// be markers too.
func IsMarker(e *telemetry.Event) bool {
	if e.EventType != "sample" && MatchesCollectiveToken(e.EventType) {
		return true
	}
	if e.HasContext && e.Context != "" && MatchesCollectiveToken(e.Context) {
		return true
	}
	return e.HasMetadata() && e.AnyMetadataString(MatchesCollectiveToken)
}
