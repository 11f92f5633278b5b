package window

import "testing"

func TestRankClaim(t *testing.T) {
	const s = int64(1_000_000_000)
	type rec struct {
		host   string
		ts     int64
		ok     bool
		holder string
	}
	for _, tc := range []struct {
		name string
		recs []rec
	}{
		{"one host", []rec{{"a", 1 * s, true, ""}, {"a", 2 * s, true, ""}}},
		{"two hosts at once", []rec{
			{"a", 1 * s, true, ""},
			{"b", 1*s + s/10, false, "a"},
			{"a", 2 * s, true, ""},
			{"b", 2*s + s/10, false, "a"},
		}},
		{"a restart on another host takes over", []rec{
			{"a", 1 * s, true, ""},
			{"a", 10 * s, true, ""},
			{"b", 40 * s, true, ""},
			{"a", 41 * s, false, "b"}, // the old process is gone
		}},
		{"the holder's late records still join", []rec{
			{"a", 10 * s, true, ""},
			{"a", 5 * s, true, ""},
			{"b", 14 * s, false, "a"},
		}},
		{"records without a host never conflict", []rec{
			{"", 1 * s, true, ""},
			{"a", 1 * s, true, ""},
			{"", 2 * s, true, ""},
			{"a", 3 * s, true, ""},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rb Rank
			for i, r := range tc.recs {
				ok, holder := rb.Claim(r.host, r.ts)
				if ok != r.ok || holder != r.holder {
					t.Fatalf("record %d (%q at %d): %v, %q; want %v, %q", i, r.host, r.ts, ok, holder, r.ok, r.holder)
				}
			}
		})
	}
}
