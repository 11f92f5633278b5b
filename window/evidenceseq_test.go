package window

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The evidence snapshot numbers a rank's samples by push while they are
// in time order: over rounds of pushes and evictions the number of the
// first sample moves by what left the window, each number names the same
// (time, gap), and a late sample (out of order) makes the rank unnumbered.
func TestEvidenceSnapshotNumbersSamples(t *testing.T) {
	job := NewJob("j", &Config{MaxEventsPerRank: 50, Window: time.Hour}, &Counts{})
	rb := job.AddRank(0)
	pushed := int64(0)
	push := func(k int) {
		job.AddSamples(rb, "s", k, func(i int) (int64, int64, int64) {
			ts := (pushed + int64(i) + 1) * 100_000_000
			return ts, ts / 1000, 80 << 30
		})
		pushed += int64(k)
	}
	var sc Scratch
	var es EvidenceScratch
	seen := map[uint64][2]int64{} // number -> (time, gap)
	for round, k := range []int{40, 10, 30, 3, 50, 1} {
		push(k)
		snap := job.EvidenceSnapshot(&sc, &es)
		require.Len(t, snap.Input.Ranks, 1)
		s := snap.Input.Ranks[0].Samples
		require.True(t, s.Sequenced, "round %d", round)
		require.Equal(t, uint64(pushed)-uint64(s.Len()), s.FirstSeq, "round %d: the first sample's number is what was pushed before it", round)
		for i := range s.Len() {
			n := s.FirstSeq + uint64(i)
			if was, ok := seen[n]; ok {
				require.Equal(t, was, [2]int64{s.TimesNs[i], s.GapBytes[i]}, "round %d: number %d names another sample", round, n)
			}
			seen[n] = [2]int64{s.TimesNs[i], s.GapBytes[i]}
		}
	}
	// A late sample: the samples are copied in time order, unnumbered.
	job.AddSamples(rb, "s", 1, func(int) (int64, int64, int64) { return 150_000_000*pushed/2 + 1, 7, 80 << 30 })
	snap := job.EvidenceSnapshot(&sc, &es)
	require.False(t, snap.Input.Ranks[0].Samples.Sequenced, "a rank whose samples arrived out of order is not numbered")
}
