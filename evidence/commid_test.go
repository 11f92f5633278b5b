package evidence

import "testing"

func TestCanonicalCommID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0x7f8c496ae9f661", "0x7f8c496ae9f661"},   // as Inspector writes it
		{"0x7f8c496ae9f661ab", "0x7f8c496ae9f661"}, // the full hash
		{"7f8c496ae9f661ab", "0x7f8c496ae9f661"},   // 16 digits, no prefix
		{"0x7F8C496AE9F661AB", "0x7f8c496ae9f661"},
		{"0x00ab", "0xab"},
		{"0x0", "0x0"},
		{"0x000", "0x0"},
		{"0xab", "0xab"},
		{"0x", "0x"},
		{"0xzz", "0xzz"},
		{"0x7f8c496ae9f661ab0", "0x7f8c496ae9f661ab0"}, // 17 digits: no 64-bit hash
		{"default_pg", "default_pg"},
		{"0", "0"},
		{"world", "world"},
		{"0xe62dedaa97644a/4->5", "0xe62dedaa97644a/4->5"},
	} {
		if got := CanonicalCommID(tc.in); got != tc.want {
			t.Errorf("CanonicalCommID(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// One communicator seen through markers that write its full hash and
// through Inspector records that write it cut to 14 digits is one
// collective, shown with the fullest id whichever marker came first.
func TestCollectiveTableJoinsCommIDForms(t *testing.T) {
	for _, order := range [][]string{
		{"0x7f8c496ae9f661ab", "0x7f8c496ae9f661"},
		{"0x7f8c496ae9f661", "0x7f8c496ae9f661ab"},
	} {
		var table CollectiveTable
		a := table.InternIdentity(&Identity{Valid: true, CommID: order[0], Seq: 3, Op: "all_reduce", NRanks: 4})
		b := table.Intern(order[1], 3, map[string]any{"nccl.op": "all_reduce"})
		if a != b || len(table.List) != 1 {
			t.Fatalf("order %v: collectives %+v", order, table.List)
		}
		if table.List[0].CommID != "0x7f8c496ae9f661ab" {
			t.Fatalf("order %v: shown as %q", order, table.List[0].CommID)
		}
		if i, ok := table.Index("7F8C496AE9F661AB", "all_reduce", 3); !ok || i != a {
			t.Fatalf("Index of the bare upper-case form: %d %v", i, ok)
		}
	}
}
