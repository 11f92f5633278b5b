package store

import (
	"github.com/collectiveattr/collectiveattr/window"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// TestEvidenceBaselineCacheEqualsFresh evaluates a job after every second
// of data, as the processor's ticks do, and checks each round's results
// with the ranks' baseline caches against the same input evaluated
// without them. The data changes every way the buffers change: evictions
// at max_events_per_rank or window trims at the front, samples arriving
// out of order (inserted inside the buffer), a session change, and a
// persistent step that moves the baseline.
func TestEvidenceBaselineCacheEqualsFresh(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"evicted at max_events_per_rank", Config{MaxJobs: 2, MaxRanksPerJob: 4, MaxEventsPerRank: 260, Window: 10 * time.Minute, Mode: window.EvidenceMode}},
		{"trimmed by the window", Config{MaxJobs: 2, MaxRanksPerJob: 4, MaxEventsPerRank: 10000, Window: 25 * time.Second, Mode: window.EvidenceMode}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := evidence.ResolveConfig("medium", nil, nil)
			require.NoError(t, err)
			s := New(tc.cfg)
			var sc window.Scratch
			var es window.EvidenceScratch
			const seconds = 90
			results, evicted := 0, false
			for sec := range int64(seconds) {
				feedSecond(s, sec)
				job := s.Job("j")
				require.NotNil(t, job)
				snap := job.EvidenceSnapshot(&sc, &es)
				cached := evidence.Attribute(&snap.Input, cfg, snap.Resolver)
				for i := range snap.Input.Ranks {
					require.NotNil(t, snap.Input.Ranks[i].Baseline, "rank %d brings its cache", snap.Input.Ranks[i].Rank)
					snap.Input.Ranks[i].Baseline = nil
				}
				fresh := evidence.Attribute(&snap.Input, cfg, snap.Resolver)
				require.Equal(t, fresh, cached, "second %d: results with the baseline caches", sec)
				results += len(cached)
				if snap.Input.Ranks[0].Samples.TimesNs[0] > 0 {
					evicted = true
				}
			}
			// The comparison means something only if the rounds found
			// results and the front of the buffers moved.
			require.Greater(t, results, seconds, "results over all rounds")
			require.True(t, evicted, "the buffers lost samples at the front")
		})
	}
}

// feedSecond buffers second sec of a 3-rank job at 10 Hz: a world
// all_reduce marker with a 1 GiB spike every 5 s, NCCL's accounting every
// 500 ms, a 256 MiB step on ranks 0 and 1 at 40 s, rank 0's session
// changing at 50 s, and every 7th second the sample of 3.25 s earlier
// arriving only now.
func feedSecond(s *Store, sec int64) {
	step := int64(100 * time.Millisecond)
	for r := range int64(3) {
		session := "s1"
		if r == 0 && sec >= 50 {
			session = "s2"
		}
		sample := func(ts, n int64) {
			gap := int64(100<<20) + (n*7919%97)<<16
			if r < 2 && n >= 400 {
				gap += 256 << 20
			}
			if n%50 == 25 || n%50 == 26 {
				gap += 1 << 30
			}
			rec := stormlogRecord("j", r, ts, ingest.StormlogSample, session)
			rec.WorldSize, rec.Event.WorldSize = 3, 3
			rec.Event.AllocatorReservedBytes = telemetry.Int(8 << 30)
			rec.Event.DeviceUsedBytes = telemetry.Int(8<<30 + gap)
			rec.Event.DeviceTotalBytes = telemetry.Int(80 << 30)
			s.AddRecord(rec, wall)
		}
		for n := sec * 10; n < sec*10+10; n++ {
			ts := n * step
			sample(ts, n)
			if n%50 == 25 {
				s.AddRecord(collectiveRecord("j", r, ts-step/2, "world", "all_reduce", n/50, 250_000_000, []int64{0, 1, 2}, false), wall)
			}
			if n%5 == 0 {
				acct := int64(64 << 20)
				if n%50 == 25 || n%50 == 26 {
					acct += 1 << 30
				}
				s.AddRecord(accountingRecordOf("j", r, ts, "world", acct), wall)
			}
		}
		if sec%7 == 6 {
			late := sec*10 - 32
			sample(late*step+step/4, late)
		}
	}
}
