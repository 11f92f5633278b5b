package attribution

import (
	"bytes"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// collapsedTokens are the collective tokens after removing underscores. The
// reference tests `token in normalized or token_without_underscores in
// collapsed` for each of its eleven tokens; the first test implies the
// second, so matching these eight against the collapsed text is equivalent.
var collapsedTokens = [][]byte{
	[]byte("nccl"), []byte("collective"), []byte("communication"),
	[]byte("allreduce"), []byte("allgather"), []byte("reducescatter"),
	[]byte("broadcast"), []byte("barrier"),
}

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
	var stack [128]byte
	buf := stack[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '-' || c == '_':
			continue
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 0x80:
			c = 0 // separator
		}
		buf = append(buf, c)
	}
	if len(buf) < 4 {
		return false
	}
	for _, t := range collapsedTokens {
		if bytes.Contains(buf, t) {
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
	return len(e.Metadata) > 0 && anyStringMatches(e.Metadata)
}

func anyStringMatches(v any) bool {
	switch x := v.(type) {
	case string:
		return MatchesCollectiveToken(x)
	case map[string]any:
		for _, it := range x {
			if anyStringMatches(it) {
				return true
			}
		}
	case []any:
		for _, it := range x {
			if anyStringMatches(it) {
				return true
			}
		}
	case []string:
		for _, it := range x {
			if MatchesCollectiveToken(it) {
				return true
			}
		}
	}
	return false
}
