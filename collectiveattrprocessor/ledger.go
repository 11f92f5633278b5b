package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"slices"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/ledger"
)

// emittedClassifications are the classifications of the results the
// processor emits: the engines' and the ledger's growth results'.
func emittedClassifications() []string {
	return append(attribution.Classifications(), ledger.ClassNonCollective)
}

// ledgers is the hidden-memory ledger of evidence mode's jobs
// (docs/evidence-mode.md §6): at each evaluation of a job, every rank's
// ledger at its newest sample (gpu.memory.hidden.usage) and a
// non_collective result for a rank whose unexplained memory rose over the
// last minute. What carries from one evaluation to the next is kept per
// job until the job is forgotten. Guarded by evalMu.
type ledgers struct {
	jobs   map[string]*jobLedger
	growth ledger.GrowthDetector
	ranks  []ledger.RankInput
	// deviceWide is each of ranks' evidence.RankData.DeviceWideThroughNs.
	deviceWide []int64
	// newest is each of ranks' evidence.RankData newest sample's time and
	// hidden memory, not clamped.
	newest [][2]int64
	// zeros are the reservations of the ledger's samples: the buffers keep
	// the hidden gap (clamped at 0, as the reference reads it), not used
	// and reserved apart; the newest sample's exact hidden memory (newest)
	// corrects the gauges' unexplained part.
	zeros []int64
	// markers are the ranks' marker start times, each rank's a sub-slice.
	markers []int64
	row     ledger.Row
}

// jobLedger is what a job's ledger keeps between evaluations: per rank its
// settled context levels (a session's first level stays once its start
// has left the window) and the end of the last growth reported. None of it
// is checkpointed: after a restart the context levels are set again from
// the oldest samples in the window, and restoredNs (the newest event of
// the restored job) stands for every rank's last growth end, since what
// was reported before the restart is not known: a growth is reported again
// only over a minute of data received after it.
type jobLedger struct {
	contexts   map[int64][]ledger.SessionLevel
	growthEnd  map[int64]int64
	restoredNs int64
}

func newLedgers() *ledgers { return &ledgers{jobs: map[string]*jobLedger{}} }

func newJobLedger() *jobLedger {
	return &jobLedger{contexts: map[int64][]ledger.SessionLevel{}, growthEnd: map[int64]int64{}}
}

// restored notes that job id came back from a checkpoint whose newest
// event was at newestNs.
func (ls *ledgers) restored(id string, newestNs int64) {
	jl := newJobLedger()
	jl.restoredNs = newestNs
	ls.jobs[id] = jl
}

// evaluate appends to points the ledger of every rank of in (the job's
// evidence input, attributed into results with interval padding padding)
// at its newest sample, and returns the growth results to emit.
func (ls *ledgers) evaluate(jobID string, in *evidence.Input, results []attribution.Result, padding int64, points []output.LedgerPoint) ([]output.LedgerPoint, []attribution.Result) {
	jl := ls.jobs[jobID]
	if jl == nil {
		jl = newJobLedger()
		ls.jobs[jobID] = jl
	}
	ls.ranks, ls.deviceWide, ls.newest = ls.ranks[:0], ls.deviceWide[:0], ls.newest[:0]
	nMarkers := 0
	for i := range in.Ranks {
		nMarkers += len(in.Ranks[i].Markers)
	}
	ls.markers = slices.Grow(ls.markers[:0], nMarkers) // sized once: the sub-slices stay valid
	for i := range in.Ranks {
		rd := &in.Ranks[i]
		n := rd.Samples.Len()
		if n == 0 {
			continue
		}
		if len(ls.zeros) < n {
			ls.zeros = make([]int64, n)
		}
		m0 := len(ls.markers)
		for _, mk := range rd.Markers {
			ls.markers = append(ls.markers, mk.StartNs)
		}
		ls.ranks = append(ls.ranks, ledger.RankInput{
			MarkersNs: ls.markers[m0:len(ls.markers):len(ls.markers)],
			Rank:      rd.Rank,
			Samples: ledger.Samples{TimesNs: rd.Samples.TimesNs, UsedBytes: rd.Samples.GapBytes, ReservedBytes: ls.zeros[:n],
				Session: rd.Samples.Session, SessionIDs: rd.Samples.SessionIDs},
			Accounting: rd.Accounting,
			Contexts:   jl.contexts[rd.Rank],
		})
		ls.deviceWide = append(ls.deviceWide, rd.DeviceWideThroughNs)
		ls.newest = append(ls.newest, [2]int64{rd.NewestHiddenNs, rd.NewestHiddenBytes})
	}
	l := ledger.New(&ledger.Input{Ranks: ls.ranks, Results: results, PaddingNs: padding})
	var growths []attribution.Result
	for ri := range ls.ranks {
		rank := ls.ranks[ri].Rank
		times := ls.ranks[ri].Samples.TimesNs
		l.SeekOf(ri, times[len(times)-1]-ledger.GrowthWindowNs)
		for l.NextOf(ri, &ls.row) {
			ls.growth.Add(&ls.row)
		}
		last := &ls.row
		unexplained := last.UnexplainedBytes
		if nw := ls.newest[ri]; nw[0] == last.TimestampNs {
			// The buffers read a negative hidden gap as 0: the parts add up
			// to the sample's own hidden memory, as the CLI's rows do.
			unexplained += nw[1] - last.HiddenBytes
		}
		points = append(points, output.LedgerPoint{JobID: jobID, Rank: rank, TimestampNs: last.TimestampNs,
			NCCL: last.NCCLBytes, Context: last.ContextBytes, Unexplained: unexplained})
		if levels := l.Contexts(ri); len(levels) > 0 {
			jl.contexts[rank] = levels
		}
		g, ok := ls.growth.Detect()
		end, seen := jl.growthEnd[rank]
		if !seen && jl.restoredNs != 0 {
			end, seen = jl.restoredNs, true
		}
		if ok && (!seen || g.StartNs > end) {
			jl.growthEnd[rank] = g.EndNs
			r := ledger.GrowthResult(rank, g, last.HiddenBytes, l.Tracked(ri), in.ExpectedWorldSize)
			if g.StartNs <= ls.deviceWide[ri] {
				// As evidence mode's results: the growth may be another
				// process's on the GPU.
				r.ReasonCodes = []string{evidence.ReasonDeviceWideMemory, ledger.ReasonUnexplainedGrowth}
			}
			growths = append(growths, r)
		}
	}
	return points, growths
}

// keep drops the ledgers of the jobs tracked says are no longer tracked
// (finished, idle or evicted).
func (ls *ledgers) keep(tracked func(id string) bool) {
	for id := range ls.jobs {
		if !tracked(id) {
			delete(ls.jobs, id)
		}
	}
}
