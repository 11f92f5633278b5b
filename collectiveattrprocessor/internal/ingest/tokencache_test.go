package ingest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// TestTokenCacheAgreesWithTheMatcher asks the cache, twice and in several
// orders (so that hits, misses and colliding replacements all happen), about
// texts that match and texts that differ from a match by one byte.
func TestTokenCacheAgreesWithTheMatcher(t *testing.T) {
	texts := []string{"", "a", "nccl", "ncc", "NCCL", "nc_cl", "forward", "backward", "kernel_launch",
		"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "All-Reduce", "all reduce", "Broadcasting",
		"barrie", "barrier", "reduce_scatter", "reducescattr", "0x7f3c", "7",
		strings.Repeat("x", maxCachedText) + "nccl", strings.Repeat("y", maxCachedText-4) + "nccl",
		strings.Repeat("z", maxCachedText-3) + "ncc"}
	for i := range 600 { // enough distinct texts to collide in every slot
		texts = append(texts, fmt.Sprintf("step_%d", i), fmt.Sprintf("ncc%dl", i), fmt.Sprintf("op%d_allgather", i))
	}
	var tc tokenCache
	for round := range 3 {
		for i := range texts {
			s := texts[i]
			if round == 1 {
				s = texts[len(texts)-1-i]
			}
			if got, want := tc.matches(s), attribution.MatchesCollectiveToken(s); got != want {
				t.Fatalf("round %d: matches(%q) = %v, want %v", round, s, got, want)
			}
		}
	}
}
