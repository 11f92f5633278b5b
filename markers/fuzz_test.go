package markers

import "testing"

// FuzzParseRanks: ParseRanks never panics and gives only non-negative
// ranks, or nil.
func FuzzParseRanks(f *testing.F) {
	for _, s := range []string{"[0, 1, 2, 3]", "[0, 1, ..., 63]", "[]", "[99999999999999999999]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ranks := ParseRanks(s)
		if ranks != nil && len(ranks) == 0 {
			t.Fatal("empty non-nil ranks")
		}
		for _, r := range ranks {
			if r < 0 {
				t.Fatalf("negative rank in %q: %v", s, ranks)
			}
		}
	})
}
