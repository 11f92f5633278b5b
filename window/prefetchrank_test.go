package window_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/internal/eventgen"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

// TestAddEventsEqualsAddOneByOne: AddEvents, which asks for the lines of
// the ranks a few records ahead, buffers what Add buffers record by record,
// in both modes, over chunks of every size: ranks that arrive for the
// first time within a chunk (nothing to ask for yet), ranks the job holds
// in its map rather than by index (large, scattered), the same rank many
// times in a row, and ranks in a random order.
func TestAddEventsEqualsAddOneByOne(t *testing.T) {
	base := eventgen.Events(eventgen.Spec{Ranks: 24, Samples: 40, SpikeRate: 0.1, Markers: true, Identity: true, Lists: eventgen.ListsEvery, Seed: 3})
	rng := rand.New(rand.NewPCG(1, 2))
	shuffled := append([]telemetry.Event(nil), base...)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	scattered := append([]telemetry.Event(nil), base...)
	for i := range scattered {
		if r := scattered[i].Rank; r%3 == 0 {
			scattered[i].Rank = r<<32 + 7
			scattered[i].WorldSize = 1 << 40
		}
	}
	runs := append([]telemetry.Event(nil), base...)
	for i := range runs {
		runs[i].Rank = int64(i / 50 % 24)
	}
	inputs := map[string][]telemetry.Event{"time order": base, "shuffled": shuffled, "scattered ranks": scattered, "runs of one rank": runs}
	for name, events := range inputs {
		for _, mode := range []window.Mode{window.ReferenceMode, window.EvidenceMode} {
			want := window.NewStream(mode, false)
			for i := range events {
				want.Add(&events[i])
			}
			for _, chunk := range []int{1, 3, 9, 64, len(events)} {
				got := window.NewStream(mode, false)
				for from := 0; from < len(events); from += chunk {
					got.AddEvents(events[from:min(from+chunk, len(events))])
				}
				var sw, sg window.Scratch
				require.Equal(t, want.Job().Snapshot(&sw).Input, got.Job().Snapshot(&sg).Input, "%s, chunks of %d", name, chunk)
				var ew, eg window.EvidenceScratch
				require.Equal(t, want.Job().EvidenceSnapshot(&sw, &ew).Input, got.Job().EvidenceSnapshot(&sg, &eg).Input, "%s, chunks of %d", name, chunk)
			}
		}
	}
}
