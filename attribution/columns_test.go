package attribution

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/collectiveattr/collectiveattr/phase"
)

// columnsOf is in as columns, each run as short as the values allow.
func columnsOf(in Input) ColumnInput {
	out := ColumnInput{ExpectedWorldSize: in.ExpectedWorldSize, TraceStartNs: in.TraceStartNs}
	for _, rs := range in.Ranks {
		cs := ColumnSeries{Rank: rs.Rank, Markers: rs.Markers}
		for i, s := range rs.Samples {
			cs.TimestampsNs = append(cs.TimestampsNs, s.TimestampNs)
			cs.GapBytes = append(cs.GapBytes, s.GapBytes)
			if i == 0 || s.TotalBytes != rs.Samples[i-1].TotalBytes {
				cs.Totals = append(cs.Totals, Int64Run{From: i, Value: s.TotalBytes})
			}
			if i == 0 || s.SessionID != rs.Samples[i-1].SessionID {
				cs.Sessions = append(cs.Sessions, StringRun{From: i, Value: s.SessionID})
			}
		}
		out.Ranks = append(out.Ranks, cs)
	}
	return out
}

// checkColumnsMatch fails unless AttributeColumns on in's columns gives
// AttributeInput's results, on one goroutine and on several.
// It returns how many results they gave.
func checkColumnsMatch(t *testing.T, in Input, cfg Config, resolver PhaseResolver) int {
	t.Helper()
	want := AttributeInput(in, cfg, resolver)
	got := AttributeColumns(columnsOf(in), cfg, resolver)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("columns:\n%+v\nrows:\n%+v", got, want)
	}
	for _, workers := range []int{2, 3} {
		if got := AttributeColumnsParallel(columnsOf(in), cfg, resolver, workers); !reflect.DeepEqual(got, want) {
			t.Fatalf("columns on %d workers:\n%+v\nrows:\n%+v", workers, got, want)
		}
	}
	if got := AttributeColumns(withSortedGaps(columnsOf(in)), cfg, resolver); !reflect.DeepEqual(got, want) {
		t.Fatalf("columns with sorted gaps:\n%+v\nrows:\n%+v", got, want)
	}
	return len(want)
}

// withSortedGaps is in with each series' SortedGaps set.
func withSortedGaps(in ColumnInput) ColumnInput {
	for i := range in.Ranks {
		rs := &in.Ranks[i]
		rs.SortedGaps = make([]int64, len(rs.GapBytes))
		for j, g := range rs.GapBytes {
			rs.SortedGaps[j] = max(0, g)
		}
		slices.Sort(rs.SortedGaps)
	}
	return in
}

// FuzzAttributeColumns: the columnar input gives the row input's results.
func FuzzAttributeColumns(f *testing.F) {
	f.Add([]byte{0, 10, 5, 1, 1, 3, 1, 10, 5, 1, 1, 3, 0, 20, 5, 2, 1, 3, 0, 20, 0, 0, 1, 3}, uint8(4))
	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		events := fuzzEvents(data)
		checkColumnsMatch(t, oldBuildInput(events), fuzzConfig(sel), phase.NewIndex(events, nil))
	})
}

// TestAttributeColumnsMatchesRows compares the two input forms on runs with
// spikes, markers, changing device totals (unknown ones among them),
// several sessions per rank and runs that start after sample 0.
func TestAttributeColumnsMatchesRows(t *testing.T) {
	tests := []struct {
		name     string
		ranks    int
		samples  int
		sessions int
		totals   int
	}{
		{"one rank, one session", 1, 40, 1, 1},
		{"eight ranks, sessions and totals change", 8, 60, 3, 4},
		{"too few samples", 4, 5, 1, 1},
		{"unknown totals", 6, 50, 2, 0},
	}
	for _, tt := range tests {
		results := 0
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, 7))
			var in Input
			in.ExpectedWorldSize = int64(tt.ranks + int(seed%3))
			in.TraceStartNs = 1_000
			for r := range tt.ranks {
				rs := RankSeries{Rank: int64(r * 2)}
				for i := range tt.samples {
					ts := int64(i)*100_000_000 + int64(rng.IntN(3))*1_000_000
					gap := int64(100_000_000 + rng.IntN(4_000_000))
					if i%17 == 9 || rng.IntN(40) == 0 {
						gap = 2_000_000_000 + int64(rng.IntN(1<<20))
						rs.Markers = append(rs.Markers, ts+int64(rng.IntN(50))*1_000_000)
					}
					total := int64(0)
					if tt.totals > 0 {
						total = int64(16+i*tt.totals/tt.samples) << 30
						if rng.IntN(10) == 0 {
							total = -1
						}
					}
					session := ""
					if s := i * tt.sessions / tt.samples; s > 0 || seed%2 == 0 {
						session = string(rune('a' + s))
					}
					rs.Samples = append(rs.Samples, Sample{TimestampNs: ts, GapBytes: gap, TotalBytes: total, SessionID: session})
				}
				in.Ranks = append(in.Ranks, rs)
			}
			for _, preset := range []string{"low", "medium", "high"} {
				results += checkColumnsMatch(t, in, presets[preset], nil)
			}
			cfg := presets["high"]
			cfg.MinConfidence = 0
			results += checkColumnsMatch(t, in, cfg, nil)
		}
		if tt.samples >= 40 && results == 0 {
			t.Errorf("%s: no results to compare", tt.name)
		}
	}
}

// TestSessionAt reads the run covering a sample.
func TestSessionAt(t *testing.T) {
	runs := []StringRun{{From: 2, Value: "a"}, {From: 5, Value: "b"}}
	tests := []struct {
		i    int
		want string
	}{{0, ""}, {1, ""}, {2, "a"}, {4, "a"}, {5, "b"}, {100, "b"}}
	for _, tt := range tests {
		if got := sessionAt(runs, tt.i); got != tt.want {
			t.Errorf("sessionAt(%d) = %q, want %q", tt.i, got, tt.want)
		}
	}
	if got := sessionAt(nil, 3); got != "" {
		t.Errorf("no runs: %q", got)
	}
}
