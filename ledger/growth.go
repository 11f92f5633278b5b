package ledger

import (
	"slices"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// A sustained rise of unexplained memory (docs/evidence-mode.md §6): over
// the latest GrowthWindowNs of a rank, the medians of unexplained memory
// over its four quarters never fall by more than growthSlackBytes from one
// quarter to the next, and the last is at least GrowthMinBytes above the
// first. Medians over quarters of a minute ignore spikes (a transient
// collective or workspace lasts well under a quarter) and allocator churn;
// what is left is a level that moved up and stayed: a leak creeping, or a
// library's workspace allocated and kept. Neither is collective.
const (
	GrowthWindowNs   = 60_000_000_000
	GrowthMinBytes   = 256 << 20
	growthSlackBytes = 32 << 20
	// growthMinRows is the least number of rows per quarter.
	growthMinRows = 2
)

// Growth is a sustained rise of one rank's unexplained memory over
// [StartNs, EndNs]: its median went from FromBytes (first quarter) to
// ToBytes (last quarter).
type Growth struct {
	StartNs, EndNs     int64
	FromBytes, ToBytes int64
}

// GrowthDetector finds a sustained rise in the rows of one rank. The zero
// value is ready; it keeps its buffers from one rank to the next.
type GrowthDetector struct {
	times, values []int64
	med           []int64
}

// Add takes the rank's next row (time order).
func (g *GrowthDetector) Add(r *Row) { g.add(r.TimestampNs, r.UnexplainedBytes) }

func (g *GrowthDetector) add(t, unexplained int64) {
	g.times = append(g.times, t)
	g.values = append(g.values, unexplained)
}

// Detect judges the latest GrowthWindowNs of the rows added since the last
// Detect (which forgets them): ok is false when there is no sustained rise,
// or the rows do not cover the window with at least growthMinRows rows in
// each quarter.
func (g *GrowthDetector) Detect() (out Growth, ok bool) {
	defer func() { g.times, g.values = g.times[:0], g.values[:0] }()
	n := len(g.times)
	if n == 0 {
		return Growth{}, false
	}
	end := g.times[n-1]
	start := end - GrowthWindowNs
	if g.times[0] > start {
		return Growth{}, false
	}
	from, _ := slices.BinarySearch(g.times, start)
	var (
		bounds      [5]int
		least, most [4]int64
	)
	bounds[0] = from
	for q := range 4 {
		bound := start + GrowthWindowNs*int64(q+1)/4
		lo, hi := bounds[q], n
		if q < 3 {
			k, _ := slices.BinarySearch(g.times[lo:], bound)
			hi = lo + k
		}
		if hi-lo < growthMinRows {
			return Growth{}, false
		}
		bounds[q+1] = hi
		least[q], most[q] = minMax(g.values[lo:hi])
	}
	// A quarter's median lies between its least and most values: most
	// rows have no rise, and the bounds tell so without the medians.
	if most[3]-least[0] < GrowthMinBytes {
		return Growth{}, false
	}
	for q := 1; q < 4; q++ {
		if most[q] < least[q-1]-growthSlackBytes {
			return Growth{}, false
		}
	}
	// The first quarter's median, then whether the last one's can be
	// GrowthMinBytes above it, by counting: most ranks' spikes defeat the
	// bounds above, and most ranks have no rise. Where no value is near
	// the ends of int64 (any bytes of memory), no difference below wraps,
	// so the checks' order does not change what they say.
	var medians [4]int64
	median := func(q int) int64 {
		g.med = append(g.med[:0], g.values[bounds[q]:bounds[q+1]]...)
		return lowerMedian(g.med)
	}
	medians[0] = median(0)
	if slices.Min(least[:]) >= -1<<61 && slices.Max(most[:]) <= 1<<61 &&
		!lowerMedianAtLeast(g.values[bounds[3]:bounds[4]], medians[0]+GrowthMinBytes) {
		return Growth{}, false
	}
	for q := 1; q < 4; q++ {
		medians[q] = median(q)
		if medians[q] < medians[q-1]-growthSlackBytes {
			return Growth{}, false
		}
	}
	if medians[3]-medians[0] < GrowthMinBytes {
		return Growth{}, false
	}
	return Growth{StartNs: g.times[from], EndNs: end, FromBytes: medians[0], ToBytes: medians[3]}, true
}

// minMax is slices.Min and slices.Max of v (not empty) in one pass.
func minMax(v []int64) (lo, hi int64) {
	lo, hi = v[0], v[0]
	for _, x := range v[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// lowerMedianAtLeast reports whether lowerMedian(v) >= x (v not empty),
// counting instead of selecting: the ((len(v)-1)/2)-th smallest is at
// least x when at most that many values are below x.
func lowerMedianAtLeast(v []int64, x int64) bool {
	below := 0
	for _, y := range v {
		if y < x {
			below++
		}
	}
	return below <= (len(v)-1)/2
}

// lowerMedian is the ((len(v)-1)/2)-th smallest of v (not empty), found by
// selection; it reorders v.
func lowerMedian(v []int64) int64 {
	k := (len(v) - 1) / 2
	lo, hi := 0, len(v) // v[:lo] <= v[k] <= v[hi:]
	for hi-lo > 1 {
		// Three-way partition of v[lo:hi] around the median of three.
		a, b, c := v[lo], v[lo+(hi-lo)/2], v[hi-1]
		pivot := max(min(a, b), min(max(a, b), c))
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch x := v[i]; {
			case x < pivot:
				v[lt], v[i] = x, v[lt]
				lt++
				i++
			case x > pivot:
				gt--
				v[gt], v[i] = x, v[gt]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return pivot
		}
	}
	return v[k]
}

// The result a sustained rise of unexplained memory gives (evidence mode's
// processor, docs/evidence-mode.md §6): not a collective.
const (
	ClassNonCollective      = "non_collective"
	KindUnexplainedGrowth   = "unexplained_growth"
	ReasonUnexplainedGrowth = "unexplained_growth"
)

// GrowthResult is growth g of rank as an attribution result: classified
// non_collective, kind unexplained_growth, its excess the rise of the
// median; hidden the rank's hidden memory at the window's end. Its
// confidence is 0.95 when NCCL's accounting is tracked on the rank (NCCL's
// own figures leave the rise out), else 0.8 (a collective change the
// attribution could not tell could be in it).
func GrowthResult(rank int64, g Growth, hidden int64, tracked bool, worldSize int64) attribution.Result {
	conf := 0.8
	if tracked {
		conf = 0.95
	}
	return attribution.Result{
		Rank:            rank,
		IntervalStartNs: g.StartNs,
		IntervalEndNs:   uint64(max(g.EndNs, 0)),
		Classification:  ClassNonCollective,
		Confidence:      conf,
		ReasonCodes:     []string{ReasonUnexplainedGrowth},
		Evidence:        attribution.Evidence{PeakGapBytes: hidden, ExpectedWorldSize: worldSize},
		Mode:            attribution.ModeEvidence,
		Kind:            KindUnexplainedGrowth,
		ExcessBytes:     g.ToBytes - g.FromBytes,
	}
}

// Tracked reports whether rank index ri of the input reports NCCL
// accounting the ledger uses.
func (l *Ledger) Tracked(ri int) bool { return l.ranks[ri].tracked }
