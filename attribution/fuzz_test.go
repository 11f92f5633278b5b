package attribution

import (
	"cmp"
	"math"
	"slices"
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// fuzzEvents turns bytes into a run: 6 bytes per event (rank, time, kind,
// gap, device total, world size), with coarse values so equal timestamps,
// equal gaps, window edges and flat baselines are common.
func fuzzEvents(data []byte) []telemetry.Event {
	var out []telemetry.Event
	for len(data) >= 6 {
		b := data[:6]
		data = data[6:]
		rank := int64(b[0] % 5)
		e := telemetry.Event{
			SchemaVersion: 3, SessionID: "s", TimestampNs: int64(b[1]) * 30_000_000, Rank: rank,
			WorldSize: int64(b[5]%6) + rank, EventType: "sample",
			AllocatorReservedBytes: telemetry.Int(1_000_000_000),
		}
		switch b[2] % 8 {
		case 0:
			e.EventType = "collective"
		case 1:
			e.EventType = " SAMPLE "
		case 2:
			e.Context, e.HasContext = "NCCL all_reduce", true
		case 3:
			e.EventType = "alloc"
		case 4:
			e.Metadata = map[string]any{"k": []any{"x", map[string]any{"y": "Barrier"}}}
		}
		gap := int64(0)
		switch b[3] % 4 {
		case 1:
			gap = 40_000_000 + int64(b[3]>>2)*1_000_000
		case 2:
			gap = 1_600_000_000
		case 3:
			gap = int64(b[3]) << 26
		}
		e.DeviceUsedBytes = telemetry.Int(1_000_000_000 + gap)
		if b[2]%8 == 7 {
			e.DeviceUsedBytes = telemetry.OptInt{}
		}
		switch b[4] % 3 {
		case 1:
			e.DeviceTotalBytes = telemetry.Int(16 << 30)
		case 2:
			e.DeviceTotalBytes = telemetry.Int(int64(b[4]) << 24)
		}
		out = append(out, e)
	}
	return out
}

func fuzzConfig(sel uint8) Config {
	c := presets[[]string{"low", "medium", "high"}[sel%3]]
	if sel&4 != 0 {
		c.MinSamplesPerRank = 3
	}
	if sel&8 != 0 {
		c.SynchronyWindowNs = 0
	}
	if sel&16 != 0 {
		c.MinConfidence = 0
	}
	if sel&32 != 0 {
		c.MinGapBytes = 0
	}
	if sel&64 != 0 {
		c.MarkerWindowNs = 30_000_000
	}
	return c
}

// naiveSpike is a spike computed the reference's way: stable global sort,
// median and MAD by sorting for every candidate, markers by linear scan,
// synchrony over all pairs.
type naiveSpike struct {
	rank, ts, index int64
	z               float64
	markers         []int64
	synced          int64
}

func naiveSpikes(events []telemetry.Event, cfg Config) []naiveSpike {
	ordered := slices.Clone(events)
	slices.SortStableFunc(ordered, func(a, b telemetry.Event) int { return cmp.Compare(a.TimestampNs, b.TimestampNs) })
	markers := map[int64][]int64{}
	samples := map[int64][]telemetry.Event{}
	for _, e := range ordered {
		if IsMarker(&e) {
			markers[e.Rank] = append(markers[e.Rank], e.TimestampNs)
		}
		if IsSample(&e) {
			samples[e.Rank] = append(samples[e.Rank], e)
		}
	}
	var out []naiveSpike
	for rank, rs := range samples {
		if int64(len(rs)) < cfg.MinSamplesPerRank {
			continue
		}
		g := make([]float64, len(rs))
		for i, e := range rs {
			g[i] = float64(max(0, e.DeviceUsedBytes.Value-e.AllocatorReservedBytes.Value))
		}
		for i, e := range rs {
			gap := max(0, e.DeviceUsedBytes.Value-e.AllocatorReservedBytes.Value)
			ratioOK := e.DeviceTotalBytes.Valid && e.DeviceTotalBytes.Value > 0 &&
				float64(gap)/float64(e.DeviceTotalBytes.Value) >= cfg.MinGapRatio
			if !ratioOK && gap < cfg.MinGapBytes {
				continue
			}
			z := naiveZ(g, float64(gap))
			if z < cfg.RobustZscoreThreshold {
				continue
			}
			var near []int64
			for _, m := range markers[rank] {
				if max(m-e.TimestampNs, e.TimestampNs-m) <= cfg.MarkerWindowNs {
					near = append(near, m)
				}
			}
			out = append(out, naiveSpike{rank: rank, ts: e.TimestampNs, index: int64(i), z: pyRound(z, 4), markers: near})
		}
	}
	for i := range out {
		ranks := map[int64]bool{}
		for _, o := range out {
			if max(o.ts-out[i].ts, out[i].ts-o.ts) <= cfg.SynchronyWindowNs {
				ranks[o.rank] = true
			}
		}
		out[i].synced = int64(len(ranks))
	}
	slices.SortFunc(out, func(a, b naiveSpike) int { return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.index, b.index)) })
	return out
}

func naiveZ(values []float64, v float64) float64 {
	med := func(a []float64) float64 {
		s := slices.Sorted(slices.Values(a))
		n := len(s)
		if n%2 == 1 {
			return s[n/2]
		}
		return (s[n/2-1] + s[n/2]) / 2
	}
	m := med(values)
	dev := make([]float64, len(values))
	for i, x := range values {
		dev[i] = math.Abs(x - m)
	}
	if mad := med(dev); mad > 0 {
		return max(0, 0.6745*(v-m)/mad)
	}
	mean := pairwiseSum(values) / float64(len(values))
	sq := make([]float64, len(values))
	for i, x := range values {
		sq[i] = (x - mean) * (x - mean)
	}
	if sd := math.Sqrt(pairwiseSum(sq) / float64(len(values)-1)); sd > 0 {
		return max(0, (v-mean)/sd)
	}
	return 0
}

// FuzzAttribute runs arbitrary event sets: no panic; the fast spike search
// equals the naive reference; results are sorted by (rank, start) with
// disjoint per-rank intervals, confidence in (0, 1] consistent with the
// classification, reason codes from the closed set, and contributing marker
// times inside the interval.
func FuzzAttribute(f *testing.F) {
	f.Add([]byte{0, 10, 5, 1, 1, 3, 1, 10, 5, 1, 1, 3, 0, 20, 5, 2, 1, 3, 0, 20, 0, 0, 1, 3}, uint8(4))
	seed := make([]byte, 0, 6*40)
	for i := range 40 {
		gap := byte(1)
		if i%10 == 6 {
			gap = 2
		}
		seed = append(seed, byte(i%2), byte(i/2), 5, gap, 1, 2)
		if gap == 2 {
			seed = append(seed, byte(i%2), byte(i/2), 0, 0, 1, 2)
		}
	}
	f.Add(seed, uint8(1))
	f.Add(seed, uint8(2|16|32))
	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		events := fuzzEvents(data)
		cfg := fuzzConfig(sel)

		in := oldBuildInput(events)
		fast := detectSpikes(in, cfg)
		if len(fast) > 0 {
			markSynchrony(fast, cfg.SynchronyWindowNs, len(in.Ranks))
		}
		naive := naiveSpikes(events, cfg)
		if len(fast) != len(naive) {
			t.Fatalf("%d spikes, naive %d", len(fast), len(naive))
		}
		for i, n := range naive {
			s := fast[i]
			if s.rank != n.rank || s.ts != n.ts || s.zRounded != n.z || s.syncCount != n.synced || !slices.Equal(s.markers, n.markers) {
				t.Fatalf("spike %d: fast %+v, naive %+v", i, s, n)
			}
		}

		results := AttributeColumns(columnsOf(in), cfg, nil)
		for i, r := range results {
			if i > 0 {
				p := results[i-1]
				if p.Rank > r.Rank || (p.Rank == r.Rank && p.IntervalStartNs > r.IntervalStartNs) {
					t.Fatalf("results out of order at %d", i)
				}
				if p.Rank == r.Rank && uint64(r.IntervalStartNs) <= p.IntervalEndNs {
					t.Fatalf("overlapping intervals on rank %d", r.Rank)
				}
			}
			if uint64(r.IntervalStartNs) > r.IntervalEndNs {
				t.Fatalf("empty interval %+v", r)
			}
			if !(r.Confidence > 0 && r.Confidence <= 1) || r.Confidence < cfg.MinConfidence {
				t.Fatalf("confidence %v", r.Confidence)
			}
			// Classification comes from the unrounded value, confidence is
			// rounded to 3 decimals: 0.7996 reads 0.8 but is only "likely".
			switch r.Classification {
			case CollectiveConfident:
				if r.Confidence < 0.8 {
					t.Fatalf("confident at %v", r.Confidence)
				}
			case CollectiveLikely:
				if r.Confidence < 0.6 || r.Confidence > 0.8 {
					t.Fatalf("likely at %v", r.Confidence)
				}
			case CollectiveSuspect:
				if r.Confidence > 0.6 {
					t.Fatalf("suspect at %v", r.Confidence)
				}
			default:
				t.Fatalf("classification %q", r.Classification)
			}
			if !slices.IsSorted(r.ReasonCodes) || len(slices.Compact(slices.Clone(r.ReasonCodes))) != len(r.ReasonCodes) ||
				!slices.Contains(r.ReasonCodes, "gap_spike_statistical_outlier") {
				t.Fatalf("reason codes %v", r.ReasonCodes)
			}
			for _, c := range r.ReasonCodes {
				if !slices.Contains(ReasonCodes, c) {
					t.Fatalf("reason code %q outside the closed set", c)
				}
			}
			if slices.Contains(r.ReasonCodes, "marker_collective_token") != (r.Evidence.MarkerHits > 0) {
				t.Fatalf("marker codes %v with %d hits", r.ReasonCodes, r.Evidence.MarkerHits)
			}
			if !slices.IsSorted(r.MarkerTimesNs) || (r.Evidence.MarkerHits > 0) != (len(r.MarkerTimesNs) > 0) {
				t.Fatalf("marker times %v, hits %d", r.MarkerTimesNs, r.Evidence.MarkerHits)
			}
			for _, m := range r.MarkerTimesNs {
				if m < r.IntervalStartNs || uint64(m) > r.IntervalEndNs {
					t.Fatalf("marker %d outside [%d, %d]", m, r.IntervalStartNs, r.IntervalEndNs)
				}
			}
		}
	})
}
