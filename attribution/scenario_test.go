package attribution_test

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

// The reference test fixtures (§5.1).
const (
	baseNs  = int64(1_700_000_000_000_000_000)
	stepNs  = int64(100_000_000)
	ms      = int64(1_000_000)
	total16 = int64(17_179_869_184)
)

// ev is the reference's event factory.
func ev(ts, rank, worldSize, reserved, used int64, total telemetry.OptInt, eventType string) telemetry.Event {
	e := telemetry.Event{
		SchemaVersion: 2, TimestampNs: ts, EventType: eventType, Collector: "stormlog.cuda_tracker",
		SamplingIntervalMs: 100, PID: 1, Host: "test", Rank: rank, LocalRank: rank, WorldSize: worldSize,
		AllocatorAllocatedBytes: telemetry.Int(max(0, reserved-100_000_000)),
		AllocatorReservedBytes:  telemetry.Int(reserved),
		AllocatorChangeBytes:    telemetry.Int(0),
		DeviceUsedBytes:         telemetry.Int(used),
		DeviceTotalBytes:        total,
	}
	if total.Valid {
		e.DeviceFreeBytes = telemetry.Int(max(0, total.Value-used))
	}
	return e
}

func marker(ts, rank, worldSize, reserved int64, total telemetry.OptInt) telemetry.Event {
	e := ev(ts, rank, worldSize, reserved, reserved, total, "collective")
	e.Context, e.HasContext = "NCCL all_reduce phase", true
	e.Metadata = map[string]any{"phase": "communication.collective"}
	return e
}

// run describes a synthetic run in the style of the reference's builder:
// reserved 2e9, baseline gap 40 MB, spike gap 1.6 GB, ranks 2 ms apart,
// 16 GiB devices, a marker 10 ms after each spike.
type run struct {
	worldSize  int64
	ranks      int64 // ranks with data (default worldSize)
	samples    int
	spikes     []int
	markers    bool
	total      telemetry.OptInt
	rankOffset func(rank int64) int64
	skipSpike  func(rank int64) bool
	eventType  string
	gaps       []int64 // per-sample gap override
	metadata   map[string]any
}

func (r run) events() []telemetry.Event {
	if r.samples == 0 {
		r.samples = 12
	}
	if r.spikes == nil {
		r.spikes = []int{6}
	}
	if r.ranks == 0 {
		r.ranks = r.worldSize
	}
	if r.rankOffset == nil {
		r.rankOffset = func(rank int64) int64 { return rank * 2 * ms }
	}
	if r.eventType == "" {
		r.eventType = "sample"
	}
	const reserved = int64(2_000_000_000)
	var out []telemetry.Event
	for rank := int64(0); rank < r.ranks; rank++ {
		for i := 0; i < r.samples; i++ {
			ts := baseNs + int64(i)*stepNs + r.rankOffset(rank)
			gap := int64(40_000_000)
			spike := slices.Contains(r.spikes, i) && (r.skipSpike == nil || !r.skipSpike(rank))
			if spike {
				gap = 1_600_000_000
			}
			if r.gaps != nil {
				gap = r.gaps[i]
			}
			e := ev(ts, rank, r.worldSize, reserved, reserved+gap, r.total, r.eventType)
			e.Metadata = r.metadata
			out = append(out, e)
			if spike && r.markers {
				out = append(out, marker(ts+10*ms, rank, r.worldSize, reserved, r.total))
			}
		}
	}
	return out
}

func cfg(t *testing.T, preset string) attribution.Config {
	t.Helper()
	c, err := attribution.ResolveConfig(preset, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	sixteen  = telemetry.Int(total16)
	allFive  = []string{"allocator_device_divergence", "cross_rank_synchrony", "gap_spike_statistical_outlier", "marker_collective_token", "marker_spike_overlap"}
	timingRC = []string{"allocator_device_divergence", "cross_rank_synchrony", "gap_spike_statistical_outlier", "weak_marker_signal"}
)

type want struct {
	rank           int64
	start, end     int64 // offsets from baseNs
	class          string
	conf           float64
	reasons        []string
	hits, synced   int64
	expected       int64
	syncRatio      float64
	ratio          *float64
	z              float64
	checkEvidence  bool
	checkIntervals bool
}

func check(t *testing.T, got []attribution.Result, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Fatalf("%d results, want %d: %+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		g := got[i]
		if g.Rank != w.rank || g.Classification != w.class || g.Confidence != w.conf {
			t.Errorf("result %d: rank %d %s %v, want rank %d %s %v", i, g.Rank, g.Classification, g.Confidence, w.rank, w.class, w.conf)
		}
		if w.reasons != nil && !slices.Equal(g.ReasonCodes, w.reasons) {
			t.Errorf("result %d: reasons %v, want %v", i, g.ReasonCodes, w.reasons)
		}
		if w.checkIntervals && (g.IntervalStartNs != baseNs+w.start || g.EndNs() != baseNs+w.end) {
			t.Errorf("result %d: interval [%d, %d] ms, want [%d, %d] ms", i,
				(g.IntervalStartNs-baseNs)/ms, (g.EndNs()-baseNs)/ms, w.start/ms, w.end/ms)
		}
		if w.checkEvidence {
			e := g.Evidence
			if e.MarkerHits != w.hits || e.SynchronizedRanks != w.synced || e.ExpectedWorldSize != w.expected ||
				e.SynchronyRatio != w.syncRatio || e.RobustZscore != w.z {
				t.Errorf("result %d: evidence %+v", i, e)
			}
			if (e.PeakGapRatio == nil) != (w.ratio == nil) || (w.ratio != nil && *e.PeakGapRatio != *w.ratio) {
				t.Errorf("result %d: peak_gap_ratio %v, want %v", i, e.PeakGapRatio, w.ratio)
			}
		}
	}
}

func ptr(f float64) *float64 { return &f }

// TestReferenceScenarios reproduces the reference's twelve tests (§5.2) with
// the exact outputs listed there.
func TestReferenceScenarios(t *testing.T) {
	medium := cfg(t, "medium")
	ratio := ptr(0.093132)

	t.Run("3 positive markers and synchrony", func(t *testing.T) {
		var w []want
		for r := range int64(4) {
			w = append(w, want{rank: r, start: 480*ms + 2*r*ms, end: 730*ms + 2*r*ms, class: "collective_confident", conf: 1.0,
				reasons: allFive, hits: 1, synced: 4, expected: 4, syncRatio: 1.0, ratio: ratio, z: 3.1754,
				checkEvidence: true, checkIntervals: true})
		}
		check(t, window.AttributeReference(run{worldSize: 4, markers: true, total: sixteen}.events(), medium, nil), w)
	})
	t.Run("4 negative only rank 0 spikes", func(t *testing.T) {
		evs := run{worldSize: 2, total: sixteen, skipSpike: func(r int64) bool { return r == 1 }}.events()
		check(t, window.AttributeReference(evs, medium, nil), nil)
	})
	t.Run("5 timing only", func(t *testing.T) {
		var w []want
		for r := range int64(4) {
			w = append(w, want{rank: r, start: 480*ms + 2*r*ms, end: 720*ms + 2*r*ms, class: "collective_suspect", conf: 0.51,
				reasons: timingRC, synced: 4, expected: 4, syncRatio: 1.0, ratio: ratio, z: 3.1754,
				checkEvidence: true, checkIntervals: true})
		}
		check(t, window.AttributeReference(run{worldSize: 4, total: sixteen}.events(), medium, nil), w)
	})
	t.Run("6 single rank", func(t *testing.T) {
		check(t, window.AttributeReference(run{worldSize: 1, markers: true, total: sixteen}.events(), medium, nil), []want{{
			rank: 0, start: 480 * ms, end: 730 * ms, class: "collective_suspect", conf: 0.51,
			reasons: []string{"allocator_device_divergence", "gap_spike_statistical_outlier", "marker_collective_token", "marker_spike_overlap", "single_rank_only"},
			hits:    1, synced: 1, expected: 1, syncRatio: 0.0, ratio: ratio, z: 3.1754, checkEvidence: true, checkIntervals: true,
		}})
	})
	t.Run("7 missing device total", func(t *testing.T) {
		var w []want
		for r := range int64(3) {
			w = append(w, want{rank: r, class: "collective_confident", conf: 0.95, reasons: allFive,
				hits: 1, synced: 3, expected: 3, syncRatio: 1.0, ratio: nil, z: 3.1754, checkEvidence: true})
		}
		check(t, window.AttributeReference(run{worldSize: 3, markers: true}.events(), medium, nil), w)
	})
	t.Run("8 no significant gap", func(t *testing.T) {
		var evs []telemetry.Event
		for r := range int64(2) {
			for i := range int64(12) {
				reserved := 1_500_000_000 + i*1_000_000
				evs = append(evs, ev(baseNs+i*stepNs+r*ms, r, 2, reserved, reserved+5_000_000, sixteen, "sample"))
			}
		}
		check(t, window.AttributeReference(evs, medium, nil), nil)
	})
	t.Run("9 markers are rank-local", func(t *testing.T) {
		evs := run{worldSize: 2, total: sixteen}.events()
		evs = append(evs, marker(baseNs+610*ms, 0, 2, 2_000_000_000, sixteen))
		check(t, window.AttributeReference(evs, medium, nil), []want{
			{rank: 0, start: 480 * ms, end: 730 * ms, class: "collective_confident", conf: 1.0, reasons: allFive, checkIntervals: true},
			{rank: 1, start: 482 * ms, end: 722 * ms, class: "collective_suspect", conf: 0.51, reasons: timingRC, checkIntervals: true},
		})
	})
	t.Run("10 upper-case SAMPLE", func(t *testing.T) {
		evs := run{worldSize: 2, markers: true, total: sixteen, eventType: " SAMPLE "}.events()
		check(t, window.AttributeReference(evs, medium, nil), []want{
			{rank: 0, class: "collective_confident", conf: 1.0}, {rank: 1, class: "collective_confident", conf: 1.0},
		})
	})
	t.Run("11 clamp to trace start", func(t *testing.T) {
		const base = int64(5_000_000)
		var evs []telemetry.Event
		for r := range int64(2) {
			for i := range int64(10) {
				ts := base + i*ms + r*ms/10
				gap := int64(0)
				if i == 5 {
					gap = 2_200_000_000
				}
				evs = append(evs, ev(ts, r, 2, 2_000_000_000, 2_000_000_000+gap, sixteen, "sample"))
				if i == 5 {
					evs = append(evs, marker(ts+ms/10, r, 2, 2_000_000_000, sixteen))
				}
			}
		}
		got := window.AttributeReference(evs, medium, nil)
		if len(got) != 2 {
			t.Fatalf("%d results", len(got))
		}
		for i, end := range []uint64{130_100_000, 130_200_000} {
			g := got[i]
			if g.IntervalStartNs != base || g.IntervalEndNs != end || g.Evidence.RobustZscore != 2.846 ||
				*g.Evidence.PeakGapRatio != 0.128057 || g.Confidence != 1.0 {
				t.Errorf("rank %d: %+v %+v", i, g, g.Evidence)
			}
		}
	})
	t.Run("12 metadata keys ignored", func(t *testing.T) {
		evs := run{worldSize: 2, total: sixteen, metadata: map[string]any{"communication_stats": 0}}.events()
		check(t, window.AttributeReference(evs, medium, nil), []want{
			{rank: 0, class: "collective_suspect", conf: 0.51, reasons: timingRC},
			{rank: 1, class: "collective_suspect", conf: 0.51, reasons: timingRC},
		})
	})
}

// TestExtraVectors covers §5.3 (outputs computed with the reference).
func TestExtraVectors(t *testing.T) {
	medium, high, low := cfg(t, "medium"), cfg(t, "high"), cfg(t, "low")
	for _, n := range []int{6, 8} {
		evs := run{worldSize: 2, samples: n, spikes: []int{n / 2}, markers: true, total: sixteen}.events()
		check(t, window.AttributeReference(evs, medium, nil), nil) // z 2.0412 / 2.4749 < 2.5
	}
	t.Run("n=9 and n=10", func(t *testing.T) {
		for _, tc := range []struct {
			n, spike   int
			z          float64
			start, end int64
		}{{9, 4, 2.6667, 280 * ms, 530 * ms}, {10, 5, 2.846, 380 * ms, 630 * ms}} {
			evs := run{worldSize: 2, samples: tc.n, spikes: []int{tc.spike}, markers: true, total: sixteen}.events()
			var w []want
			for r := range int64(2) {
				w = append(w, want{rank: r, start: tc.start + 2*r*ms, end: tc.end + 2*r*ms, class: "collective_confident", conf: 1.0,
					hits: 1, synced: 2, expected: 2, syncRatio: 1.0, ratio: ptr(0.093132), z: tc.z, checkEvidence: true, checkIntervals: true})
			}
			check(t, window.AttributeReference(evs, medium, nil), w)
		}
	})
	t.Run("two spikes merge under high", func(t *testing.T) {
		evs := run{worldSize: 2, spikes: []int{5, 6}, markers: true, total: sixteen}.events()
		check(t, window.AttributeReference(evs, medium, nil), nil) // z 2.1409
		got := window.AttributeReference(evs, high, nil)
		var w []want
		for r := range int64(2) {
			w = append(w, want{rank: r, start: 340*ms + 2*r*ms, end: 770*ms + 2*r*ms, class: "collective_confident", conf: 1.0,
				hits: 2, synced: 2, expected: 2, syncRatio: 1.0, ratio: ptr(0.093132), z: 2.1409, checkEvidence: true, checkIntervals: true})
		}
		check(t, got, w)
		for _, g := range got {
			spikeMarkers := []int64{baseNs + 510*ms + 2*g.Rank*ms, baseNs + 610*ms + 2*g.Rank*ms}
			if !slices.Equal(g.MarkerTimesNs, spikeMarkers) {
				t.Errorf("rank %d marker times %v, want the union %v", g.Rank, g.MarkerTimesNs, spikeMarkers)
			}
		}
	})
	t.Run("MAD path", func(t *testing.T) {
		gaps := []int64{10e6, 20e6, 30e6, 40e6, 50e6, 60e6, 70e6, 80e6, 90e6, 100e6, 110e6, 1000e6}
		evs := run{worldSize: 2, spikes: []int{11}, gaps: gaps, markers: true, total: sixteen}.events()
		got := window.AttributeReference(evs, medium, nil)
		check(t, got, []want{
			{rank: 0, start: 980 * ms, end: 1230 * ms, class: "collective_confident", conf: 1.0, checkIntervals: true,
				hits: 1, synced: 2, expected: 2, syncRatio: 1.0, ratio: ptr(0.058208), z: 21.0219, checkEvidence: true},
			{rank: 1, start: 982 * ms, end: 1232 * ms, class: "collective_confident", conf: 1.0, checkIntervals: true},
		})
	})
	t.Run("declared world 4, one rank", func(t *testing.T) {
		got := window.AttributeReference(run{worldSize: 4, ranks: 1, markers: true, total: sixteen}.events(), medium, nil)
		check(t, got, []want{{rank: 0, class: "collective_suspect", conf: 0.51, hits: 1, synced: 1, expected: 4,
			syncRatio: 0.0, ratio: ptr(0.093132), z: 3.1754, checkEvidence: true}})
		if !slices.Contains(got[0].ReasonCodes, "single_rank_only") {
			t.Fatal("want single_rank_only")
		}
	})
	t.Run("rank offset 130 ms is outside the window", func(t *testing.T) {
		off := func(r int64) int64 { return r * 130 * ms }
		got := window.AttributeReference(run{worldSize: 2, markers: true, total: sixteen, rankOffset: off}.events(), medium, nil)
		check(t, got, []want{
			{rank: 0, class: "collective_suspect", conf: 0.51},
			{rank: 1, start: 610 * ms, end: 860 * ms, class: "collective_suspect", conf: 0.51, checkIntervals: true},
		})
	})
	t.Run("rank offset exactly 120 ms is inside", func(t *testing.T) {
		off := func(r int64) int64 { return r * 120 * ms }
		check(t, window.AttributeReference(run{worldSize: 2, markers: true, total: sixteen, rankOffset: off}.events(), medium, nil), []want{
			{rank: 0, class: "collective_confident", conf: 1.0}, {rank: 1, class: "collective_confident", conf: 1.0},
		})
	})
	t.Run("low and high paddings", func(t *testing.T) {
		got := window.AttributeReference(run{worldSize: 4, markers: true, total: sixteen}.events(), low, nil)
		check(t, got[:1], []want{{rank: 0, start: 500 * ms, end: 710 * ms, class: "collective_confident", conf: 1.0, checkIntervals: true}})
		got = window.AttributeReference(run{worldSize: 4, total: sixteen}.events(), high, nil)
		check(t, got[:1], []want{{rank: 0, start: 440 * ms, end: 760 * ms, class: "collective_suspect", conf: 0.51, checkIntervals: true}})
	})
	t.Run("constant gap", func(t *testing.T) {
		gaps := slices.Repeat([]int64{500_000_000}, 12)
		check(t, window.AttributeReference(run{worldSize: 2, gaps: gaps, total: sixteen}.events(), medium, nil), nil)
	})
	t.Run("empty and sample-free input", func(t *testing.T) {
		check(t, window.AttributeReference(nil, medium, nil), nil)
		only := []telemetry.Event{marker(baseNs, 0, 1, 1, sixteen)}
		check(t, window.AttributeReference(only, medium, nil), nil)
	})
	t.Run("null counters skip a sample (R2)", func(t *testing.T) {
		evs := run{worldSize: 2, markers: true, total: sixteen, samples: 10, spikes: []int{5}}.events()
		for i := range evs {
			if evs[i].EventType == "sample" && evs[i].TimestampNs%stepNs == 0 && evs[i].Rank == 0 {
				evs[i].DeviceUsedBytes = telemetry.OptInt{}
				break // rank 0 loses one baseline sample: 9 samples, z (8/3) still passes
			}
		}
		got := window.AttributeReference(evs, medium, nil)
		if len(got) != 2 || got[0].Evidence.RobustZscore != 2.6667 {
			t.Fatalf("%+v", got)
		}
	})
}

// TestFractionalOverrides: an integer field given a fraction acts as Python
// compares an int with a float: a rank of 9 samples passes
// min_samples_per_rank 9 but not 9.5; a marker 10 ms after the spike is
// within 10_000_000.9 ns but not 9_999_999.9; ranks 2 ms apart are
// synchronous within 2_000_000.5 ns but not 1_999_999.5.
func TestFractionalOverrides(t *testing.T) {
	events := run{worldSize: 2, samples: 9, markers: true, total: sixteen}.events()
	attribute := func(overrides map[string]any) []attribution.Result {
		t.Helper()
		got, err := attributeWithPreset(events, "medium", overrides, nil)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if n := len(attribute(map[string]any{"min_samples_per_rank": json.Number("9")})); n != 2 {
		t.Fatalf("9 samples against 9: %d results, want 2", n)
	}
	if n := len(attribute(map[string]any{"min_samples_per_rank": json.Number("9.5")})); n != 0 {
		t.Fatalf("9 samples against 9.5: %d results, want 0", n)
	}
	// evidence is the first result's evidence with one window overridden.
	evidence := func(window, value string) attribution.Evidence {
		t.Helper()
		got := attribute(map[string]any{window: json.Number(value), "min_confidence": 0})
		if len(got) == 0 {
			t.Fatalf("%s %s: no results", window, value)
		}
		return got[0].Evidence
	}
	if in, out := evidence("marker_window_ns", "10000000.9").MarkerHits, evidence("marker_window_ns", "9999999.9").MarkerHits; in != 1 || out != 0 {
		t.Fatalf("marker hits %d within 10000000.9, %d within 9999999.9", in, out)
	}
	if in, out := evidence("synchrony_window_ns", "2000000.5").SynchronizedRanks, evidence("synchrony_window_ns", "1999999.5").SynchronizedRanks; in != 2 || out != 1 {
		t.Fatalf("synchronized ranks %d within 2000000.5, %d within 1999999.5", in, out)
	}
}

// TestIntervalEndPastInt64: Python's ints grow, so an end padded past the
// int64 range is written exactly, and still merges and orders as a number.
func TestIntervalEndPastInt64(t *testing.T) {
	const maxNs = int64(math.MaxInt64)
	events := []telemetry.Event{
		ev(maxNs-2, 0, 1, 2_000_000_000, 2_040_000_000, sixteen, "sample"),
		ev(maxNs-1, 0, 1, 2_000_000_000, 2_040_000_000, sixteen, "sample"),
		ev(maxNs, 0, 1, 2_000_000_000, 3_600_000_000, sixteen, "sample"),
	}
	overrides := map[string]any{"min_samples_per_rank": 3, "robust_zscore_threshold": 1, "min_confidence": 0}
	got, err := attributeWithPreset(events, "medium", overrides, nil)
	if err != nil || len(got) != 1 {
		t.Fatalf("%d results, err %v", len(got), err)
	}
	// medium pads by 120 ms.
	if want := uint64(math.MaxInt64) + 120_000_000; got[0].IntervalEndNs != want {
		t.Fatalf("end %d, want %d", got[0].IntervalEndNs, want)
	}
	if js := string(attribution.AppendResultJSON(nil, &got[0], false)); !strings.Contains(js, `"interval_end_ns":9223372036974775807,`) {
		t.Fatalf("JSON %s", js)
	}

	// The largest padding on an ordinary run: every end is past int64, and
	// the two spikes of a rank, 300 ms apart, merge as they do in Python.
	ordinary := run{worldSize: 2, samples: 12, spikes: []int{5, 8}, markers: true, total: sixteen}.events()
	overrides = map[string]any{"interval_padding_ns": maxNs, "robust_zscore_threshold": 1, "min_confidence": 0}
	got, err = attributeWithPreset(ordinary, "medium", overrides, nil)
	if err != nil || len(got) != 2 {
		t.Fatalf("%d results, err %v", len(got), err)
	}
	for _, r := range got {
		lastMarker := r.MarkerTimesNs[len(r.MarkerTimesNs)-1]
		if want := uint64(lastMarker) + uint64(maxNs); r.IntervalEndNs != want || len(r.MarkerTimesNs) != 2 {
			t.Fatalf("rank %d: end %d, want %d (last marker plus the padding); markers %v, want both spikes'", r.Rank, r.IntervalEndNs, want, r.MarkerTimesNs)
		}
	}
}
