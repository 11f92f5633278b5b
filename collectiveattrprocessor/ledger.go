package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"slices"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/output"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/internal/parallel"
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
	jobs  map[string]*jobLedger
	ranks []ledger.RankInput
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
	// groups are the round's contiguous runs of ranks, one per worker
	// (ranks are independent in the ledger).
	groups []ledgerGroup
}

// ledgerFlagCounts counts the ledger points of a round whose sample was
// unusual: [0] NCCL's accounting above the sample's hidden memory, [1]
// negative hidden memory (processor_collectiveattr_ledger_points_flagged).
type ledgerFlagCounts [2]int64

// ledgerGroup is a run of ranks read by one worker, with what it found,
// joined in rank order afterwards.
type ledgerGroup struct {
	ledger  ledger.Ledger
	input   ledger.Input
	growth  ledger.GrowthDetector
	row     ledger.Row
	points  []output.LedgerPoint
	flagged ledgerFlagCounts
	growths []attribution.Result
	// contexts and growthEnds are the group's updates of the job's
	// jobLedger, applied after every group is done.
	contexts   []rankContexts
	growthEnds []rankGrowthEnd
}

type rankContexts struct {
	rank   int64
	levels []ledger.SessionLevel
}

type rankGrowthEnd struct{ rank, endNs int64 }

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
// at its newest sample, and returns the growth results to emit. The ranks
// are read in up to workers contiguous groups at once; points and growths
// come out in rank order whatever workers is.
func (ls *ledgers) evaluate(jobID string, in *evidence.Input, results []attribution.Result, padding int64, points []output.LedgerPoint, workers int) ([]output.LedgerPoint, []attribution.Result, ledgerFlagCounts) {
	jl := ls.jobs[jobID]
	if jl == nil {
		jl = newJobLedger()
		ls.jobs[jobID] = jl
	}
	ls.ranks, ls.deviceWide, ls.newest = ls.ranks[:0], ls.deviceWide[:0], ls.newest[:0]
	nMarkers, maxSamples := 0, 0
	for i := range in.Ranks {
		nMarkers += len(in.Ranks[i].Markers)
		maxSamples = max(maxSamples, in.Ranks[i].Samples.Len())
	}
	if len(ls.zeros) < maxSamples {
		ls.zeros = make([]int64, maxSamples) // read only: the groups share it
	}
	ls.markers = slices.Grow(ls.markers[:0], nMarkers) // sized once: the sub-slices stay valid
	for i := range in.Ranks {
		rd := &in.Ranks[i]
		n := rd.Samples.Len()
		if n == 0 {
			continue
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
	groups := max(1, min(workers, len(ls.ranks)))
	if len(ls.groups) < groups {
		ls.groups = append(ls.groups, make([]ledgerGroup, groups-len(ls.groups))...)
	}
	parallel.For(groups, groups, func(_, gi int) {
		lo, hi := gi*len(ls.ranks)/groups, (gi+1)*len(ls.ranks)/groups
		ls.groups[gi].read(jl, ls.ranks[lo:hi], ls.deviceWide[lo:hi], ls.newest[lo:hi], results, padding, jobID, in.ExpectedWorldSize)
	})
	var (
		growths []attribution.Result
		flagged ledgerFlagCounts
	)
	for gi := range groups {
		g := &ls.groups[gi]
		points = append(points, g.points...)
		flagged[0] += g.flagged[0]
		flagged[1] += g.flagged[1]
		growths = append(growths, g.growths...)
		for _, c := range g.contexts {
			jl.contexts[c.rank] = c.levels
		}
		for _, e := range g.growthEnds {
			jl.growthEnd[e.rank] = e.endNs
		}
	}
	return points, growths, flagged
}

// read reads the ledger of ranks at their newest sample (deviceWide and
// newest: each rank's evidence.RankData.DeviceWideThroughNs and newest
// sample's time and hidden memory). It only reads jl: its updates are kept
// in g.
func (g *ledgerGroup) read(jl *jobLedger, ranks []ledger.RankInput, deviceWide []int64, newest [][2]int64, results []attribution.Result, padding int64, jobID string, worldSize int64) {
	g.points, g.growths, g.contexts, g.growthEnds = g.points[:0], g.growths[:0], g.contexts[:0], g.growthEnds[:0]
	g.flagged = ledgerFlagCounts{}
	g.input = ledger.Input{Ranks: ranks, Results: results, PaddingNs: padding}
	l := &g.ledger
	l.Reset(&g.input)
	for ri := range ranks {
		rank := ranks[ri].Rank
		times := ranks[ri].Samples.TimesNs
		l.SeekOf(ri, times[len(times)-1]-ledger.GrowthWindowNs)
		l.ReadOf(ri, &g.growth, &g.row)
		last := &g.row
		unexplained, hidden := last.UnexplainedBytes, last.HiddenBytes
		if nw := newest[ri]; nw[0] == last.TimestampNs {
			// The buffers read a negative hidden gap as 0: the parts add up
			// to the sample's own hidden memory, as the CLI's rows do.
			unexplained += nw[1] - last.HiddenBytes
			hidden = nw[1]
		}
		if last.NCCLSource == ledger.SourceAccounting && last.NCCLBytes > hidden {
			g.flagged[0]++
		}
		if hidden < 0 {
			g.flagged[1]++
		}
		g.points = append(g.points, output.LedgerPoint{JobID: jobID, Rank: rank, TimestampNs: last.TimestampNs,
			NCCL: last.NCCLBytes, Context: last.ContextBytes, Unexplained: unexplained})
		if levels := l.Contexts(ri); len(levels) > 0 {
			g.contexts = append(g.contexts, rankContexts{rank, levels})
		}
		gr, ok := g.growth.Detect()
		end, seen := jl.growthEnd[rank]
		if !seen && jl.restoredNs != 0 {
			end, seen = jl.restoredNs, true
		}
		if ok && (!seen || gr.StartNs > end) {
			g.growthEnds = append(g.growthEnds, rankGrowthEnd{rank, gr.EndNs})
			r := ledger.GrowthResult(rank, gr, last.HiddenBytes, l.Tracked(ri), worldSize)
			if gr.StartNs <= deviceWide[ri] {
				// As evidence mode's results: the growth may be another
				// process's on the GPU.
				r.ReasonCodes = []string{evidence.ReasonDeviceWideMemory, ledger.ReasonUnexplainedGrowth}
			}
			g.growths = append(g.growths, r)
		}
	}
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
