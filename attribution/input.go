package attribution

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// IsSample reports whether an event is a usable sample (§2.3 S3): its
// event_type is "sample" after trimming and lower-casing, and both
// device_used_bytes and allocator_reserved_bytes are known (R2 skips samples
// with either null).
func IsSample(e *telemetry.Event) bool {
	if !e.DeviceUsedBytes.Valid || !e.AllocatorReservedBytes.Valid {
		return false
	}
	// No non-ASCII character lower-cases (in Python) to an ASCII letter of
	// "sample", so an ASCII case fold after Python's strip is exact.
	return e.EventType == "sample" || strings.EqualFold(telemetry.TrimSpace(e.EventType), "sample")
}

// SampleOf reduces a sample event to what the algorithm reads. Call it only
// for events where IsSample holds.
func SampleOf(e *telemetry.Event) Sample {
	s := Sample{
		TimestampNs: e.TimestampNs,
		GapBytes:    hiddenGap(e.DeviceUsedBytes.Value, e.AllocatorReservedBytes.Value),
		SessionID:   e.SessionID,
	}
	if e.DeviceTotalBytes.Valid && e.DeviceTotalBytes.Value > 0 {
		s.TotalBytes = e.DeviceTotalBytes.Value
	}
	return s
}

// hiddenGap is max(0, used - reserved), saturating instead of wrapping for
// counters the validator would not have let through.
func hiddenGap(used, reserved int64) int64 {
	if used <= reserved {
		return 0
	}
	if reserved < 0 && used > math.MaxInt64+reserved {
		return math.MaxInt64
	}
	return used - reserved
}

// denseRanks is the size of the direct rank→series table; other ranks use a
// map. Real jobs have ranks 0..world_size-1.
const denseRanks = 1 << 16

// BuildInput groups a run's events (§2.3 S1–S3 and S6): per rank the usable
// samples in time order (ties in input order, as after the reference's stable
// sort) and the marker timestamps ascending, plus the expected world size and
// the trace start over all events. Ranks appear in ascending rank order;
// ranks with markers but no samples are left out (they cannot spike).
func BuildInput(events []telemetry.Event) Input {
	var in Input
	if len(events) == 0 {
		return in
	}
	type group struct {
		rank    int64
		samples int
		markers int
	}
	var (
		dense  []int32 // rank → 1 + index into groups
		sparse map[int64]int32
		groups []group
	)
	idx := make([]int32, len(events)) // group of each event
	lookup := func(rank int64) int32 {
		if rank >= 0 && rank < denseRanks {
			if int(rank) >= len(dense) {
				dense = slices.Grow(dense, int(rank)+1-len(dense))[:rank+1]
			}
			if g := dense[rank]; g != 0 {
				return g - 1
			}
			groups = append(groups, group{rank: rank})
			dense[rank] = int32(len(groups))
			return int32(len(groups) - 1)
		}
		if g, ok := sparse[rank]; ok {
			return g
		}
		if sparse == nil {
			sparse = make(map[int64]int32)
		}
		groups = append(groups, group{rank: rank})
		sparse[rank] = int32(len(groups) - 1)
		return int32(len(groups) - 1)
	}

	// Pass 1: classify, count, and run-wide quantities.
	const (
		isSample = 1
		isMarker = 2
	)
	kinds := make([]uint8, len(events))
	minTs := int64(math.MaxInt64)
	var maxWorld int64
	for i := range events {
		e := &events[i]
		minTs = min(minTs, e.TimestampNs)
		if e.WorldSize > 0 {
			maxWorld = max(maxWorld, e.WorldSize)
		}
		g := lookup(e.Rank)
		idx[i] = g
		if IsSample(e) {
			kinds[i] |= isSample
			groups[g].samples++
		}
		if IsMarker(e) {
			kinds[i] |= isMarker
			groups[g].markers++
		}
	}
	in.TraceStartNs = max(0, minTs)
	in.ExpectedWorldSize = maxWorld
	if maxWorld == 0 {
		in.ExpectedWorldSize = int64(max(len(groups), 1))
	}

	// Pass 2: fill exact-size per-rank slices from two shared arenas.
	totalSamples, totalMarkers := 0, 0
	for _, g := range groups {
		totalSamples += g.samples
		totalMarkers += g.markers
	}
	sampleArena := make([]Sample, totalSamples)
	markerArena := make([]int64, totalMarkers)
	series := make([]RankSeries, len(groups))
	so, mo := 0, 0
	for gi, g := range groups {
		series[gi] = RankSeries{
			Rank:    g.rank,
			Samples: sampleArena[so : so : so+g.samples],
			Markers: markerArena[mo : mo : mo+g.markers],
		}
		so += g.samples
		mo += g.markers
	}
	for i := range events {
		k := kinds[i]
		if k == 0 {
			continue
		}
		rs := &series[idx[i]]
		if k&isSample != 0 {
			rs.Samples = append(rs.Samples, SampleOf(&events[i]))
		}
		if k&isMarker != 0 {
			rs.Markers = append(rs.Markers, events[i].TimestampNs)
		}
	}

	in.Ranks = series[:0]
	for _, rs := range series {
		if len(rs.Samples) == 0 {
			continue
		}
		if !slices.IsSortedFunc(rs.Samples, cmpSampleTime) {
			slices.SortStableFunc(rs.Samples, cmpSampleTime)
		}
		if !slices.IsSorted(rs.Markers) {
			slices.Sort(rs.Markers)
		}
		in.Ranks = append(in.Ranks, rs)
	}
	slices.SortFunc(in.Ranks, func(a, b RankSeries) int { return cmp.Compare(a.Rank, b.Rank) })
	return in
}

func cmpSampleTime(a, b Sample) int { return cmp.Compare(a.TimestampNs, b.TimestampNs) }
