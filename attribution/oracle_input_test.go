// The reference's grouping of a run's records into the engine's row input,
// kept beside the engine's tests only: the engine reads records through the
// window (package window), and these tests feed the engine row input of
// fuzzed and generated runs without it.

package attribution

import (
	"cmp"
	"math"
	"reflect"
	"slices"
	"unsafe"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// oldBuildInput groups a run's events (§2.3 S1–S3 and S6): per rank the usable
// samples in time order (ties in input order, as after the reference's stable
// sort) and the marker timestamps ascending, plus the expected world size and
// the trace start over all events. Ranks appear in ascending rank order;
// ranks with markers but no samples are left out (they cannot spike).
//
// It makes a single pass over the events: with ~300-byte events, memory
// bandwidth is the cost that matters at this size.
func oldBuildInput(events []telemetry.Event) Input {
	var in Input
	if len(events) == 0 {
		return in
	}
	var (
		dense  []int32 // rank → 1 + index into series
		sparse map[int64]int32
		series []RankSeries
	)
	// Per-rank capacity guess: events spread evenly over world_size ranks.
	perRank := len(events)
	if ws := events[0].WorldSize; ws > 1 {
		perRank = len(events)/int(min(ws, int64(len(events)))) + 16
	}
	newSeries := func(rank int64) int32 {
		series = append(series, RankSeries{Rank: rank, Samples: make([]Sample, 0, perRank)})
		return int32(len(series) - 1)
	}
	lookup := func(rank int64) int32 {
		if rank >= 0 && rank < denseRanks {
			if int(rank) >= len(dense) {
				dense = slices.Grow(dense, int(rank)+1-len(dense))[:rank+1]
			}
			if g := dense[rank]; g != 0 {
				return g - 1
			}
			g := newSeries(rank)
			dense[rank] = g + 1
			return g
		}
		if g, ok := sparse[rank]; ok {
			return g
		}
		if sparse == nil {
			sparse = make(map[int64]int32)
		}
		g := newSeries(rank)
		sparse[rank] = g
		return g
	}

	markers := oldMarkerCache{}
	minTs := int64(math.MaxInt64)
	var maxWorld int64
	for i := range events {
		e := &events[i]
		minTs = min(minTs, e.TimestampNs)
		if e.WorldSize > maxWorld {
			maxWorld = e.WorldSize
		}
		sample, marker := IsSample(e), markers.oldIsMarker(e)
		g := lookup(e.Rank)
		if sample {
			series[g].Samples = append(series[g].Samples, sampleOf(e))
		}
		if marker {
			series[g].Markers = append(series[g].Markers, e.TimestampNs)
		}
	}
	in.TraceStartNs = max(0, minTs)
	in.ExpectedWorldSize = maxWorld
	if maxWorld <= 0 {
		in.ExpectedWorldSize = int64(max(len(series), 1))
	}

	in.Ranks = series[:0]
	for _, rs := range series {
		if len(rs.Samples) == 0 {
			continue
		}
		if !slices.IsSortedFunc(rs.Samples, oldCmpSampleTime) {
			slices.SortStableFunc(rs.Samples, oldCmpSampleTime)
		}
		if !slices.IsSorted(rs.Markers) {
			slices.Sort(rs.Markers)
		}
		in.Ranks = append(in.Ranks, rs)
	}
	slices.SortFunc(in.Ranks, func(a, b RankSeries) int { return cmp.Compare(a.Rank, b.Rank) })
	return in
}

// oldMarkerCache answers IsMarker, remembering the verdict on each metadata map
// it has scanned. Decoded streams share one map per distinct metadata text
// (telemetry.Decoder interns them) and generated or converted events often
// share one map outright, so scanning metadata — the expensive part — happens
// once per distinct map instead of once per event. Maps are compared by
// identity; they are not modified during oldBuildInput.
type oldMarkerCache struct {
	lastKey   unsafe.Pointer // most recent map, checked before seen
	lastValue bool
	seen      map[unsafe.Pointer]bool
}

func (c *oldMarkerCache) oldIsMarker(e *telemetry.Event) bool {
	if e.EventType != "sample" && MatchesCollectiveToken(e.EventType) {
		return true
	}
	if e.HasContext && e.Context != "" && MatchesCollectiveToken(e.Context) {
		return true
	}
	if len(e.Metadata) == 0 {
		return false
	}
	key := reflect.ValueOf(e.Metadata).UnsafePointer()
	if key == c.lastKey {
		return c.lastValue
	}
	v, ok := c.seen[key]
	if !ok {
		v = c.oldScan(key, e.Metadata)
	}
	c.lastKey, c.lastValue = key, v
	return v
}

func (c *oldMarkerCache) oldScan(key unsafe.Pointer, metadata map[string]any) bool {
	v := anyStringMatches(metadata)
	if c.seen == nil {
		c.seen = make(map[unsafe.Pointer]bool)
	}
	if len(c.seen) < 4096 {
		c.seen[key] = v
	}
	return v
}

func oldCmpSampleTime(a, b Sample) int { return cmp.Compare(a.TimestampNs, b.TimestampNs) }

// anyStringMatches is the old builder's walk of a metadata map.
func anyStringMatches(v any) bool {
	switch x := v.(type) {
	case string:
		return MatchesCollectiveToken(x)
	case map[string]any:
		for _, it := range x {
			if anyStringMatches(it) {
				return true
			}
		}
	case []any:
		for _, it := range x {
			if anyStringMatches(it) {
				return true
			}
		}
	case []string:
		for _, it := range x {
			if MatchesCollectiveToken(it) {
				return true
			}
		}
	}
	return false
}

// denseRanks is the size of the direct rank→series table; other ranks use a
// map. Real jobs have ranks 0..world_size-1.
const denseRanks = 1 << 16

// sampleOf reduces a sample event to what the algorithm reads. Call it only
// for events where IsSample holds.
func sampleOf(e *telemetry.Event) Sample {
	s := Sample{
		TimestampNs: e.TimestampNs,
		GapBytes:    HiddenGap(e.DeviceUsedBytes.Value, e.AllocatorReservedBytes.Value),
		SessionID:   e.SessionID,
	}
	if e.DeviceTotalBytes.Valid && e.DeviceTotalBytes.Value > 0 {
		s.TotalBytes = e.DeviceTotalBytes.Value
	}
	return s
}
