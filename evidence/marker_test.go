package evidence

import (
	"encoding/json"
	"testing"
)

// TestInternIdentityKeysAsIntern: an identity read from OTLP attributes
// and the same identity in stormlog metadata name one collective, filled
// in alike (largest size, members sorted and deduplicated).
func TestInternIdentityKeysAsIntern(t *testing.T) {
	var tab CollectiveTable
	md := map[string]any{KeyOp: "all_reduce", KeyMessageBytes: json.Number("512"), KeyCommNRanks: json.Number("2")}
	a := tab.Intern("c", 7, md)
	b := tab.InternIdentity(&Identity{Valid: true, CommID: "c", Seq: 7, Op: "all_reduce", MessageBytes: 1024, Ranks: []int64{1, 0, 1}})
	if a != b || len(tab.List) != 1 {
		t.Fatalf("indices %d %d, table %+v: want one collective", a, b, tab.List)
	}
	c := tab.List[a]
	if c.MessageBytes != 1024 || c.NRanks != 2 || len(c.Ranks) != 2 || c.Ranks[0] != 0 || c.Ranks[1] != 1 {
		t.Errorf("collective %+v", c)
	}
	if d := tab.InternIdentity(&Identity{Valid: true, CommID: "c", Seq: 7, Op: "all_gather"}); d == a {
		t.Error("an all_gather of the same seq is another collective")
	}
}

// TestPointToPointOpIndependentOfOrder: the two sides of a transfer are one
// instance whose op does not depend on which side's marker came first.
func TestPointToPointOpIndependentOfOrder(t *testing.T) {
	for _, order := range [][2]string{{"send", "recv"}, {"recv", "send"}} {
		var tab CollectiveTable
		i := tab.Intern("p", 3, map[string]any{KeyOp: order[0]})
		j := tab.InternIdentity(&Identity{Valid: true, CommID: "p", Seq: 3, Op: order[1]})
		if i != j || tab.List[i].Op != "recv" {
			t.Errorf("%v: indices %d %d, op %q; want one instance named recv", order, i, j, tab.List[i].Op)
		}
	}
}
