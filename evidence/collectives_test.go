package evidence

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMembershipDeclaredOnce: a communicator's members listed on its first
// marker hold for its later instances whose markers list none, in the
// stormlog path (Intern) and the OTLP one (InternIdentity); an instance
// whose own markers list members keeps its own; equal lists share one
// slice; another communicator inherits nothing.
func TestMembershipDeclaredOnce(t *testing.T) {
	list := func(ranks ...int) []any {
		out := make([]any, len(ranks))
		for i, r := range ranks {
			out[i] = json.Number(string(rune('0' + r)))
		}
		return out
	}
	var tb CollectiveTable
	first := tb.Intern("world", 1, map[string]any{KeyOp: "all_reduce", KeyCommRanks: list(3, 1, 2, 0)})
	second := tb.Intern("world", 2, map[string]any{KeyOp: "all_reduce"})
	third := tb.InternIdentity(&Identity{Valid: true, CommID: "world", Seq: 3, Op: "all_reduce"})
	again := tb.Intern("world", 4, map[string]any{KeyOp: "all_reduce", KeyCommRanks: list(0, 1, 2, 3)})
	other := tb.Intern("tp", 1, map[string]any{KeyOp: "all_reduce"})
	want := []int64{0, 1, 2, 3}
	for _, i := range []int32{first, second, third, again} {
		assert.Equal(t, want, tb.List[i].Ranks, "instance %d", tb.List[i].Seq)
	}
	assert.Same(t, &tb.List[first].Ranks[0], &tb.List[again].Ranks[0], "equal lists share memory")
	assert.Nil(t, tb.List[other].Ranks)

	// An instance's own list replaces the inherited one, and becomes the
	// communicator's for the instances after it.
	tb.Intern("world", 2, map[string]any{KeyOp: "all_reduce", KeyCommRanks: list(0, 1)})
	require.Equal(t, []int64{0, 1}, tb.List[second].Ranks)
	assert.Equal(t, want, tb.List[third].Ranks, "an earlier instance keeps what it had")
	next := tb.InternIdentity(&Identity{Valid: true, CommID: "world", Seq: 5, Op: "all_reduce"})
	assert.Equal(t, []int64{0, 1}, tb.List[next].Ranks)
}

// countingRanks is a RankReader that counts its reads.
type countingRanks struct {
	ranks []int64
	reads int
}

func (c *countingRanks) AppendRanks(dst []int64) []int64 {
	c.reads++
	return append(dst, c.ranks...)
}

// TestMemberListReadOncePerInstance: the markers of one collective
// instance each carry the communicator's list; InternIdentity reads it for
// the instance's first marker only, and a later instance inheriting the
// declared list reads its own first marker's again (it may differ).
func TestMemberListReadOncePerInstance(t *testing.T) {
	var tb CollectiveTable
	list := &countingRanks{ranks: []int64{2, 0, 1}}
	for range 5 {
		tb.InternIdentity(&Identity{Valid: true, CommID: "world", Seq: 1, Op: "all_reduce", RanksOf: list})
	}
	assert.Equal(t, 1, list.reads)
	i := tb.InternIdentity(&Identity{Valid: true, CommID: "world", Seq: 2, Op: "all_reduce", RanksOf: list})
	tb.InternIdentity(&Identity{Valid: true, CommID: "world", Seq: 2, Op: "all_reduce", RanksOf: list})
	assert.Equal(t, 2, list.reads)
	assert.Equal(t, []int64{0, 1, 2}, tb.List[i].Ranks)
}
