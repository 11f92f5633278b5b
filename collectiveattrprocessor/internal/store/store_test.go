package store

import (
	"cmp"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

const sec = int64(time.Second)

var wall = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testConfig() Config {
	return Config{MaxJobs: 4, MaxRanksPerJob: 4, MaxEventsPerRank: 100, Window: time.Minute, Phases: true}
}

// sampleRun is a run of job's rank with a sample (gap 1 MiB, total 16 GiB)
// at each time.
func sampleRun(job string, rank int64, times ...int64) *ingest.SampleRun {
	run := &ingest.SampleRun{JobID: job, Rank: rank, WorldSize: 8, Host: "node"}
	for _, ts := range times {
		run.Samples = append(run.Samples, ingest.SamplePoint{
			TimestampNs: ts, DeviceUsed: 2 << 20, AllocatorReserved: 1 << 20, DeviceTotal: 16 << 30, Has: ingest.HasDeviceTotal,
		})
	}
	return run
}

func markerRecord(job string, rank int64, span byte, times ...int64) *ingest.Record {
	return &ingest.Record{
		Kind: ingest.KindMarker, JobID: job, Rank: rank, TimestampNs: times[0],
		Marker: ingest.SpanRef{SpanID: [8]byte{span}}, MarkerTimesNs: times,
	}
}

func stormlogRecord(job string, rank, ts int64, class ingest.StormlogClass, session string) *ingest.Record {
	return &ingest.Record{
		Kind: ingest.KindStormlog, JobID: job, Rank: rank, TimestampNs: ts, Stormlog: class,
		Event: telemetry.Event{
			SchemaVersion: 3, SessionID: session, TimestampNs: ts, EventType: "sample", Rank: rank,
			DeviceUsedBytes: telemetry.Int(5 << 20), AllocatorReservedBytes: telemetry.Int(1 << 20),
		},
	}
}

// TestAddRefusals: what each limit refuses, with which error, and that
// refused data leaves no state behind.
func TestAddRefusals(t *testing.T) {
	tests := []struct {
		name     string
		add      func(s *Store)
		want     map[error]int64
		buffered int64
		jobs     int
		events   int
	}{
		{
			name: "job limit",
			add: func(s *Store) {
				for j := range 6 {
					s.AddSampleRun(sampleRun(string(rune('a'+j)), 0, 100*sec), wall)
				}
			},
			want: map[error]int64{ErrJobLimit: 2}, buffered: 4, jobs: 4, events: 4,
		},
		{
			name: "rank limit",
			add: func(s *Store) {
				for r := range int64(5) {
					s.AddSampleRun(sampleRun("j", r, 100*sec), wall)
				}
			},
			want: map[error]int64{ErrRankLimit: 1}, buffered: 4, jobs: 1, events: 4,
		},
		{
			name: "stale samples of a run are refused up to the first in the window",
			add: func(s *Store) {
				// Two ranks make the job's event time (watermark.go).
				s.AddSampleRun(sampleRun("j", 0, 200*sec), wall)
				s.AddSampleRun(sampleRun("j", 2, 200*sec), wall)
				s.AddSampleRun(sampleRun("j", 1, 100*sec, 130*sec, 150*sec, 201*sec), wall)
			},
			want: map[error]int64{ErrStale: 2}, buffered: 4, jobs: 1, events: 4,
		},
		{
			name: "a stale record of a new job leaves no job",
			add: func(s *Store) {
				s.AddSampleRun(sampleRun("j", 0, 200*sec), wall)
				s.AddSampleRun(sampleRun("j", 2, 200*sec), wall)
				s.AddSampleRun(sampleRun("j", 1, 10*sec), wall)
			},
			want: map[error]int64{ErrStale: 1}, buffered: 2, jobs: 1, events: 2,
		},
		{
			name: "only the stale times of a marker span are refused",
			add: func(s *Store) {
				s.AddSampleRun(sampleRun("j", 0, 200*sec), wall)
				s.AddRecord(markerRecord("j", 0, 1, 100*sec, 190*sec), wall)
			},
			want: map[error]int64{ErrStale: 1}, buffered: 2, jobs: 1, events: 2,
		},
		{
			name: "a stormlog sample and marker is two entries of one record",
			add: func(s *Store) {
				s.AddRecord(stormlogRecord("j", 0, 10*sec, ingest.StormlogSample|ingest.StormlogMarker, "s"), wall)
			},
			want: map[error]int64{}, buffered: 1, jobs: 1, events: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(testConfig())
			tt.add(s)
			tally := s.Take()
			got := map[error]int64{}
			for err, n := range tally.Rejections() {
				got[err] = n
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.buffered, tally.Buffered)
			jobs, _, events := s.Sizes()
			assert.Equal(t, tt.jobs, jobs)
			assert.Equal(t, tt.events, events)
			assert.Equal(t, Tally{}, s.Take(), "Take starts counting anew")
		})
	}
}

// TestLimitErrorsNameTheirKey: a limit error says which key to raise.
func TestLimitErrorsNameTheirKey(t *testing.T) {
	var limit *LimitError
	for err, key := range map[error]string{ErrJobLimit: "limits.max_jobs", ErrRankLimit: "limits.max_ranks_per_job"} {
		require.ErrorAs(t, err, &limit)
		assert.Equal(t, key, limit.Limit)
		assert.Contains(t, err.Error(), key)
	}
	assert.NotErrorAs(t, ErrStale, &limit)
}

// TestEvictionBounds: a full rank evicts its oldest entry; the window
// evicts what falls behind the newest event.
func TestEvictionBounds(t *testing.T) {
	cfg := testConfig()
	cfg.MaxEventsPerRank = 5
	s := New(cfg)
	var times []int64
	for i := range int64(8) {
		times = append(times, 100*sec+i*sec)
	}
	first := s.AddSampleRun(sampleRun("j", 0, times...), wall)
	assert.Zero(t, first)
	tally := s.Take()
	assert.Equal(t, int64(3), tally.Evicted[BoundMaxEventsPerRank])
	rb, _ := s.InspectRank("j", 0)
	assert.Equal(t, times[3:], rb.SampleTimesNs)
	assert.LessOrEqual(t, rb.SampleCapacity, 5)

	// The window then starts at 105 s: making room drops what left it
	// first, so no entry is evicted by the count bound.
	s.AddSampleRun(sampleRun("j", 0, 165*sec), wall)
	tally = s.Take()
	assert.Zero(t, tally.Evicted[BoundMaxEventsPerRank])
	assert.Equal(t, int64(2), tally.Evicted[BoundWindow], "103 s and 104 s leave the window")
	rb, _ = s.InspectRank("j", 0)
	assert.Equal(t, []int64{105 * sec, 106 * sec, 107 * sec, 165 * sec}, rb.SampleTimesNs)
}

// TestSweep chooses the jobs to evaluate.
func TestSweep(t *testing.T) {
	tests := []struct {
		name          string
		final, dirty  bool
		at            time.Duration
		wantDue       []Due
		wantRemaining int
	}{
		{name: "dirty jobs on settle", dirty: true, at: time.Second, wantDue: []Due{{ID: "a"}, {ID: "b"}}, wantRemaining: 2},
		{name: "nothing on job end before idle", at: time.Second, wantRemaining: 2},
		{name: "idle jobs are detached", dirty: true, at: time.Hour, wantDue: []Due{{ID: "a"}, {ID: "b"}}, wantRemaining: 0},
		{name: "final detaches every job", final: true, at: time.Second, wantDue: []Due{{ID: "a"}, {ID: "b"}}, wantRemaining: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(testConfig())
			s.AddSampleRun(sampleRun("b", 0, 10*sec), wall)
			s.AddSampleRun(sampleRun("a", 0, 10*sec), wall)
			due := s.Sweep(wall.Add(tt.at), time.Minute, tt.final, tt.dirty)
			var ids []Due
			for _, d := range due {
				if (d.Detached != nil) != (tt.wantRemaining == 0) {
					t.Errorf("job %s detached: %v", d.ID, d.Detached != nil)
				}
				ids = append(ids, Due{ID: d.ID})
			}
			assert.Equal(t, tt.wantDue, ids)
			jobs, ranks, events := s.Sizes()
			assert.Equal(t, tt.wantRemaining, jobs)
			assert.Equal(t, tt.wantRemaining, ranks)
			assert.Equal(t, tt.wantRemaining, events)
			assert.Empty(t, s.Sweep(wall.Add(tt.at), time.Minute, false, true), "a job is dirty until swept")
		})
	}
}

// TestSnapshotMatchesRows: a snapshot's columns give the reference's
// grouping of the same data (reference-semantics §2.3 S1–S3, S6: per rank
// samples in time order, ties in arrival order, markers ascending; the
// largest declared world size; the earliest time), for ranks whose data
// arrives in order and out of it, with device totals and sessions that
// change.
func TestSnapshotMatchesRows(t *testing.T) {
	tests := []struct {
		name       string
		disordered bool
	}{{"in order", false}, {"out of order", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			cfg := testConfig()
			cfg.MaxEventsPerRank = 10_000
			s := New(cfg)
			var events []telemetry.Event
			for r := range int64(3) {
				for i := range int64(200) {
					ts := 100*sec + i*sec/10
					if tt.disordered && rng.IntN(5) == 0 {
						ts -= int64(rng.IntN(30)) * sec / 10
					}
					rec := stormlogRecord("j", r, ts, ingest.StormlogSample, []string{"s1", "s2"}[i/120])
					// Distinct records: identical ones are one (a duplicate).
					rec.Event.DeviceUsedBytes = telemetry.Int(int64(1+rng.IntN(9))<<20 + i)
					if i%50 < 40 {
						rec.Event.DeviceTotalBytes = telemetry.Int(int64(16+i/50) << 30)
					}
					if i%17 == 0 {
						// A sample whose context names a collective is
						// also a marker.
						rec.Stormlog |= ingest.StormlogMarker
						rec.Event.Context, rec.Event.HasContext = "nccl all_reduce", true
					}
					require.True(t, s.AddRecord(rec, wall))
					events = append(events, rec.Event)
				}
			}
			job := s.Job("j")
			var sc window.Scratch
			snap := job.Snapshot(&sc)
			want := groupedRows(events)
			require.Len(t, snap.Input.Ranks, len(want.Ranks))
			assert.Equal(t, want.ExpectedWorldSize, snap.Input.ExpectedWorldSize)
			assert.Equal(t, want.TraceStartNs, snap.Input.TraceStartNs)
			for i, rs := range want.Ranks {
				got := snap.Input.Ranks[i]
				assert.Equal(t, rs.Rank, got.Rank)
				assert.Equal(t, rs.Markers, got.Markers)
				require.Len(t, got.TimestampsNs, len(rs.Samples))
				for k, smp := range rs.Samples {
					row := rowSample{TimestampNs: got.TimestampsNs[k], GapBytes: got.GapBytes[k], TotalBytes: runValue(got.Totals, k), SessionID: runString(got.Sessions, k)}
					require.Equal(t, smp, row, "rank %d sample %d", rs.Rank, k)
				}
			}
		})
	}
}

// rowInput is a run grouped as the reference groups it, one rowSample
// per sample.
type rowInput struct {
	Ranks             []rowSeries
	ExpectedWorldSize int64
	TraceStartNs      int64
}

// rowSeries is one rank's samples in time order and its markers
// ascending.
type rowSeries struct {
	Rank    int64
	Samples []rowSample
	Markers []int64
}

// rowSample is one sample as the engine reads it.
type rowSample struct {
	TimestampNs, GapBytes, TotalBytes int64
	SessionID                         string
}

// groupedRows is the reference's grouping of a run of sample records
// (some of them markers too), written out plainly: per rank, ascending,
// its samples stably sorted by time and its marker times sorted; the
// largest declared world size, else the number of ranks.
func groupedRows(events []telemetry.Event) rowInput {
	in := rowInput{TraceStartNs: math.MaxInt64}
	series := map[int64]*rowSeries{}
	for i := range events {
		e := &events[i]
		in.ExpectedWorldSize = max(in.ExpectedWorldSize, e.WorldSize)
		in.TraceStartNs = min(in.TraceStartNs, e.TimestampNs)
		rs := series[e.Rank]
		if rs == nil {
			rs = &rowSeries{Rank: e.Rank}
			series[e.Rank] = rs
		}
		var total int64
		if e.DeviceTotalBytes.Valid && e.DeviceTotalBytes.Value > 0 {
			total = e.DeviceTotalBytes.Value
		}
		rs.Samples = append(rs.Samples, rowSample{TimestampNs: e.TimestampNs,
			GapBytes: max(0, e.DeviceUsedBytes.Value-e.AllocatorReservedBytes.Value), TotalBytes: total, SessionID: e.SessionID})
		if attribution.IsMarker(e) {
			rs.Markers = append(rs.Markers, e.TimestampNs)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(series)) {
		rs := series[r]
		slices.SortStableFunc(rs.Samples, func(a, b rowSample) int { return cmp.Compare(a.TimestampNs, b.TimestampNs) })
		slices.Sort(rs.Markers)
		in.Ranks = append(in.Ranks, *rs)
	}
	if in.ExpectedWorldSize <= 0 {
		in.ExpectedWorldSize = int64(len(in.Ranks))
	}
	return in
}

func runValue(runs []attribution.Int64Run, i int) int64 {
	v := int64(0)
	for _, r := range runs {
		if r.From <= i {
			v = r.Value
		}
	}
	return v
}

func runString(runs []attribution.StringRun, i int) string {
	v := ""
	for _, r := range runs {
		if r.From <= i {
			v = r.Value
		}
	}
	return v
}

// TestClaim decides which results leave, once each.
func TestClaim(t *testing.T) {
	s := New(testConfig())
	s.AddSampleRun(sampleRun("j", 0, 100*sec, 110*sec), wall)
	s.AddRecord(markerRecord("j", 0, 7, 104*sec, 105*sec), wall)
	job := s.Job("j")
	result := func(start, end int64, markers ...int64) *attribution.Result {
		return &attribution.Result{Rank: 0, IntervalStartNs: start, IntervalEndNs: uint64(end), MarkerTimesNs: markers}
	}
	tests := []struct {
		name     string
		r        *attribution.Result
		finalise bool
		want     bool
		links    int
	}{
		{"not settled", result(105*sec, 108*sec), false, false, 0},
		{"settled", result(103*sec, 106*sec, 104*sec, 105*sec), false, true, 1},
		{"the same interval grown", result(104*sec, 107*sec), false, false, 0},
		{"a rank without data", &attribution.Result{Rank: 3, IntervalStartNs: 1}, true, false, 0},
		{"a later interval when finalised", result(108*sec, 109*sec), true, true, 0},
	}
	// The links are appended to those of the round's earlier claims.
	earlier := []ingest.SpanRef{{TraceID: [16]byte{0xee}, SpanID: [8]byte{0xee}}}
	for _, tt := range tests {
		host, links, ok := s.Claim(job, tt.r, 2*time.Second, tt.finalise, earlier)
		assert.Equal(t, tt.want, ok, tt.name)
		require.Len(t, links, 1+tt.links, tt.name)
		assert.Equal(t, earlier[0], links[0], tt.name)
		if ok {
			assert.Equal(t, "node", host, tt.name)
		}
	}
}

// TestForget drops a job and its counts.
func TestForget(t *testing.T) {
	s := New(testConfig())
	s.AddSampleRun(sampleRun("a", 0, 10*sec, 11*sec), wall)
	s.AddSampleRun(sampleRun("a", 1, 10*sec), wall)
	s.AddSampleRun(sampleRun("b", 0, 10*sec), wall)
	s.Forget("a")
	s.Forget("missing")
	jobs, ranks, events := s.Sizes()
	assert.Equal(t, []int{1, 1, 1}, []int{jobs, ranks, events})
	assert.Nil(t, s.Job("a"))
	// The rank cache does not hand out the forgotten job.
	s.AddSampleRun(sampleRun("a", 1, 12*sec), wall)
	v, ok := s.InspectJob("a")
	require.True(t, ok)
	assert.Equal(t, JobView{Ranks: 1, Events: 1, NewestNs: 12 * sec}, v)
}

// TestPhaseBoundariesNeedPhases: without phases a boundary is kept as any
// other record.
func TestPhaseBoundariesNeedPhases(t *testing.T) {
	for _, phases := range []bool{true, false} {
		cfg := testConfig()
		cfg.Phases = phases
		s := New(cfg)
		s.AddRecord(stormlogRecord("j", 0, 10*sec, ingest.StormlogBoundary, "s"), wall)
		rb, _ := s.InspectRank("j", 0)
		assert.Equal(t, []int{b2i(phases), b2i(!phases)}, []int{rb.Boundaries, rb.Others}, "phases %v", phases)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
