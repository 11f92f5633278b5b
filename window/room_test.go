package window

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// A record that pushes two entries (a sample that is also a marker) onto a
// rank one below max_events_per_rank makes room for its second entry: the
// first, not yet counted in the job's entries, fills the rank.
func TestMakeRoomCountsTheRecordsOwnEntries(t *testing.T) {
	counts := &Counts{}
	job := NewJob("j", &Config{MaxEventsPerRank: 3, Window: time.Hour}, counts)
	rb := job.AddRank(0)
	for i, want := range []struct{ held, evicted int }{{2, 0}, {3, 1}, {3, 3}} {
		ok, added := job.Add(rb, sampleMarkerRecord(0, int64(i+1)*1000))
		require.True(t, ok)
		require.Equal(t, 2, added)
		require.Equal(t, want.held, rb.len(), "record %d", i)
		require.Equal(t, want.held, job.Events(), "record %d", i)
		require.Equal(t, int64(want.evicted), counts.Evicted[BoundMaxEventsPerRank], "record %d", i)
	}
}

// Records of a few ranks, some pushing two entries, keep every rank at
// most at max_events_per_rank and the job's entries the sum of its
// ranks', whether the job as a whole holds fewer entries than the bound or
// more.
func TestMakeRoomKeepsEveryRankBounded(t *testing.T) {
	for _, maxCap := range []int{1, 2, 5, 64} {
		rng := rand.New(rand.NewPCG(uint64(maxCap), 7))
		counts := &Counts{}
		job := NewJob("j", &Config{MaxEventsPerRank: maxCap, Window: time.Hour}, counts)
		pushed := int64(0)
		for i := range 2000 {
			r := rng.Int64N(4)
			rb := job.Rank(r)
			if rb == nil {
				rb = job.AddRank(r)
			}
			rec := sampleMarkerRecord(r, int64(i+1)*1000)
			if rng.IntN(2) == 0 {
				rec.Stormlog = StormlogSample
			}
			_, added := job.Add(rb, rec)
			pushed += int64(added)
			sum := 0
			for q := range int64(4) {
				if qb := job.Rank(q); qb != nil {
					require.LessOrEqual(t, qb.len(), maxCap, "rank %d after record %d", q, i)
					sum += qb.len()
				}
			}
			require.Equal(t, sum, job.Events())
			require.Equal(t, pushed-int64(sum), counts.Evicted[BoundMaxEventsPerRank])
		}
	}
}

// sampleMarkerRecord is a stormlog record of rank r at ts that is both a
// sample and a marker.
func sampleMarkerRecord(r, ts int64) *Record {
	return &Record{
		Kind: KindStormlog, JobID: "j", Rank: r, TimestampNs: ts, Stormlog: StormlogSample | StormlogMarker,
		Event: telemetry.Event{
			SchemaVersion: 3, SessionID: "s", TimestampNs: ts, EventType: "sample", Rank: r, WorldSize: 4,
			AllocatorReservedBytes: telemetry.Int(10 << 30), DeviceUsedBytes: telemetry.Int(11 << 30),
		},
	}
}
