package phase

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// TestNewIndexGroupsSpansAsAppendingWould: whatever the order of the spans
// (runs of one group, groups spread out, ties in (start, end)) and with
// replayed spans in some groups, every group holds what appending each span
// to its group and stable-sorting by (start, end) gives, replayed spans
// first among ties.
func TestNewIndexGroupsSpansAsAppendingWould(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	replayed := 0
	for round := range 500 {
		events := boundaryEvents(rng)
		replayed += len(replay(events))
		var spans []Span
		for range rng.IntN(60) {
			rank := int64(rng.IntN(3))
			run := 1 + rng.IntN(8)
			for range run {
				start := int64(rng.IntN(20))
				spans = append(spans, Span{SessionID: "sess", Rank: rank, ScopeID: fmt.Sprint(len(spans)), StartNs: start, EndNs: start + int64(rng.IntN(3))})
			}
		}
		want := map[groupKey][]Span{}
		for _, s := range replay(events) {
			k := groupKey{s.SessionID, s.Rank}
			want[k] = append(want[k], s)
		}
		for _, s := range spans {
			k := groupKey{s.SessionID, s.Rank}
			want[k] = append(want[k], s)
		}
		for _, g := range want {
			slices.SortStableFunc(g, func(a, b Span) int {
				return cmp.Or(cmp.Compare(a.StartNs, b.StartNs), cmp.Compare(a.EndNs, b.EndNs))
			})
		}
		ix := NewIndex(events, spans)
		if len(ix.groups) != len(want) {
			t.Fatalf("round %d: %d groups, want %d", round, len(ix.groups), len(want))
		}
		for k, g := range want {
			if got := ix.Spans(k.session, k.rank); !slices.EqualFunc(got, g, spanEqual) {
				t.Fatalf("round %d, group %v:\ngot  %v\nwant %v", round, k, scopes(got), scopes(g))
			}
		}
	}
	if replayed == 0 {
		t.Fatal("no replayed spans: the ties with replayed spans went untested")
	}
}

// boundaryEvents is a few enter/exit pairs of session "sess" on random
// ranks, or none.
func boundaryEvents(rng *rand.Rand) []telemetry.Event {
	var events []telemetry.Event
	for i := range rng.IntN(3) {
		rank := int64(rng.IntN(3))
		start := int64(rng.IntN(20))
		id := fmt.Sprintf("b%d", i)
		events = append(events,
			boundary("enter", start, rank, 1, int64(2*i), id, "train"),
			boundary("exit", start+2, rank, 1, int64(2*i+1), id, "train"))
	}
	return events
}

func spanEqual(a, b Span) bool {
	return a.SessionID == b.SessionID && a.Rank == b.Rank && a.ScopeID == b.ScopeID && a.StartNs == b.StartNs && a.EndNs == b.EndNs
}

func scopes(g []Span) []string {
	var out []string
	for _, s := range g {
		out = append(out, fmt.Sprintf("%s@%d-%d", s.ScopeID, s.StartNs, s.EndNs))
	}
	return out
}

// replay is the builder's replay of events.
func replay(events []telemetry.Event) []Span {
	var b IndexBuilder
	for i := range events {
		b.Add(&events[i])
	}
	return b.replay()
}
