package attribution

import (
	"strings"
	"testing"
)

// TestMinCollectiveTokenLen pins the length shortcut to the token list: no
// token is shorter, and the shortest is exactly that long.
func TestMinCollectiveTokenLen(t *testing.T) {
	shortest := len(collapsedTokens[0])
	for _, tok := range collapsedTokens {
		shortest = min(shortest, len(tok))
	}
	if shortest != MinCollectiveTokenLen {
		t.Fatalf("shortest token is %d bytes, MinCollectiveTokenLen is %d", shortest, MinCollectiveTokenLen)
	}
	for _, s := range []string{"nccl", "NCCL", "n_ccl"} {
		if !MatchesCollectiveToken(s) {
			t.Errorf("%q must match", s)
		}
	}
	for _, s := range []string{"ncc", "7", "", strings.Repeat("x", 3)} {
		if MatchesCollectiveToken(s) {
			t.Errorf("%q must not match", s)
		}
	}
}
