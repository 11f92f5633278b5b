package attribution

import (
	"cmp"
	"math"
	"slices"

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
	return e.EventType == "sample" || isSampleType(telemetry.TrimSpace(e.EventType))
}

// isSampleType is Python's t.lower() == "sample" for a stripped t. No
// character outside ASCII lower-cases (in Python) to an ASCII letter of
// "sample", so the fold is ASCII only: strings.EqualFold would also fold
// U+017F (long s), which Python's lower() leaves as it is.
func isSampleType(t string) bool {
	const want = "sample"
	if len(t) != len(want) {
		return false
	}
	for i := 0; i < len(want); i++ {
		if c := t[i]; c != want[i] && c+('a'-'A') != want[i] {
			return false
		}
	}
	return true
}

// SampleOf reduces a sample event to what the algorithm reads. Call it only
// for events where IsSample holds.
func SampleOf(e *telemetry.Event) Sample {
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

// HiddenGap is max(0, used - reserved), saturating instead of wrapping for
// counters the validator would not have let through.
func HiddenGap(used, reserved int64) int64 {
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
// ranks with markers but no samples are left out (they cannot spike). It is
// an InputBuilder fed every event.
func BuildInput(events []telemetry.Event) Input {
	var b InputBuilder
	if len(events) > 0 {
		// Per-rank capacity guess: events spread evenly over world_size ranks.
		b.perRank = len(events)
		if ws := events[0].WorldSize; ws > 1 {
			b.perRank = len(events)/int(min(ws, int64(len(events)))) + 16
		}
	}
	b.AddEvents(events)
	return b.Input()
}

// InputBuilder builds the Input of a run from its events fed one at a time
// in input order (a decoded stream), keeping per rank only the columns the
// algorithm reads: samples reduced to Sample, and marker times. Its zero
// value is ready to use.
type InputBuilder struct {
	dense    []int32 // rank → 1 + index into series
	sparse   map[int64]int32
	series   []RankSeries
	events   int
	minTs    int64
	maxWorld int64
	// perRank is the capacity of a new rank's samples (0: grow as needed).
	perRank int
}

// Add adds one event. The builder keeps no reference to e.
func (b *InputBuilder) Add(e *telemetry.Event) {
	if b.events == 0 || e.TimestampNs < b.minTs {
		b.minTs = e.TimestampNs
	}
	b.events++
	if e.WorldSize > b.maxWorld {
		b.maxWorld = e.WorldSize
	}
	sample, marker := IsSample(e), IsMarker(e)
	g := b.lookup(e.Rank)
	if sample {
		b.series[g].Samples = append(b.series[g].Samples, SampleOf(e))
	}
	if marker {
		b.series[g].Markers = append(b.series[g].Markers, e.TimestampNs)
	}
}

// AddEvents adds events in order.
func (b *InputBuilder) AddEvents(events []telemetry.Event) {
	for i := range events {
		b.Add(&events[i])
	}
}

// Events is the number of events added.
func (b *InputBuilder) Events() int { return b.events }

// Input returns the grouped run, as BuildInput over the events added. The
// Input owns the builder's slices: call it once, after the last Add.
func (b *InputBuilder) Input() Input {
	var in Input
	if b.events == 0 {
		return in
	}
	in.TraceStartNs = max(0, b.minTs)
	in.ExpectedWorldSize = b.maxWorld
	if b.maxWorld <= 0 {
		in.ExpectedWorldSize = int64(max(len(b.series), 1))
	}
	in.Ranks = b.series[:0]
	for _, rs := range b.series {
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

// lookup returns the index of rank's series, adding it when new.
func (b *InputBuilder) lookup(rank int64) int32 {
	if rank >= 0 && rank < denseRanks {
		if int(rank) >= len(b.dense) {
			b.dense = slices.Grow(b.dense, int(rank)+1-len(b.dense))[:rank+1]
		}
		if g := b.dense[rank]; g != 0 {
			return g - 1
		}
		g := b.newSeries(rank)
		b.dense[rank] = g + 1
		return g
	}
	if g, ok := b.sparse[rank]; ok {
		return g
	}
	if b.sparse == nil {
		b.sparse = make(map[int64]int32)
	}
	g := b.newSeries(rank)
	b.sparse[rank] = g
	return g
}

func (b *InputBuilder) newSeries(rank int64) int32 {
	b.series = append(b.series, RankSeries{Rank: rank, Samples: make([]Sample, 0, b.perRank)})
	return int32(len(b.series) - 1)
}

func cmpSampleTime(a, b Sample) int { return cmp.Compare(a.TimestampNs, b.TimestampNs) }
