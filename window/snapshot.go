package window

import (
	"cmp"
	"math"
	"slices"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/internal/parallel"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Scratch is memory a Snapshot is built in, reused from one snapshot to
// the next. A Snapshot is valid until its Scratch is used again.
type Scratch struct {
	times    []int64
	gaps     []int64
	markers  []int64
	totals   []attribution.Int64Run
	sessions []attribution.StringRun
	ranks    []attribution.ColumnSeries
	rankIDs  []int64
	events   []telemetry.Event
	spans    []phase.Span
	ends     []sessionEnd
	rows     []sampleRow
	runs     []seriesRuns
	parents  phaseParents
	// replicas are those of the ranks the latest snapshot read
	// (ReserveReplicas).
	replicas []*sampleReplica
	// read are, per series of the latest snapshot, the replica entries
	// it hands over (rep nil for a rank copied and sorted), for SortGaps.
	read []replicaRead
	// batches are SortGaps' buffers, one per worker.
	batches []gapBatches
}

// replicaRead is the range [from, to) of rep's entries a series reads.
type replicaRead struct {
	rep      *sampleReplica
	from, to int
}

// seriesRuns are the ranges of a series' runs in totals and sessions.
type seriesRuns struct{ totals, sessions [2]int }

// sessionEnd is the newest event time of one (session, rank): the phase
// index closes scopes still open there (reference-semantics §3.2 step 5).
type sessionEnd struct {
	session string
	rank    int64
	endNs   int64
}

// sampleRow is a sample read out of order, to be sorted.
type sampleRow struct {
	ts, gap, total int64
	session        uint32
}

// Snapshot is a job's evaluation input: its buffered data inside the
// window, as the attribution reads it. Resolver is nil without phases or
// phase data.
type Snapshot struct {
	Input    attribution.ColumnInput
	Resolver attribution.PhaseResolver
}

// Snapshot copies job's buffers (entries inside the window) into sc, column
// by column: per rank the samples in time order (ties in arrival order, as
// after the reference's stable sort) and the marker times ascending; the
// expected world size is the largest declared one, else the number of
// ranks with data; the trace start is the earliest buffered event. With
// phases on, the phase index gets the stormlog phase boundaries, each
// (session, rank)'s newest event time and the phase spans from traces,
// whose paths it first completes with parents that arrived since.
//
// It reads only the job and the store's configuration (and completes the
// job's phase paths in place): a detached job's snapshot needs no lock.
func (job *Job) Snapshot(sc *Scratch) Snapshot {
	cutoff := job.cutoffNs()
	nSamples, nMarkers := 0, 0
	sc.rankIDs = sc.rankIDs[:0]
	clear(sc.replicas)
	sc.replicas = sc.replicas[:0]
	for r, rb := range job.ranks {
		if rb.samples.disordered {
			nSamples += rb.samples.len()
		}
		nMarkers += rb.markers.len()
		sc.rankIDs = append(sc.rankIDs, r)
	}
	slices.Sort(sc.rankIDs)
	// Sized once, so that the per-rank sub-slices below stay valid.
	sc.times = slices.Grow(sc.times[:0], nSamples)
	sc.gaps = slices.Grow(sc.gaps[:0], nSamples)
	sc.markers = slices.Grow(sc.markers[:0], nMarkers)
	sc.totals = sc.totals[:0]
	sc.sessions = sc.sessions[:0]
	sc.ranks = sc.ranks[:0]
	sc.read = sc.read[:0]
	sc.events = sc.events[:0]
	sc.spans = sc.spans[:0]

	var (
		worldSize   int64
		ranksWithAn int64
		earliest    = int64(math.MaxInt64)
	)
	sc.runs = sc.runs[:0]
	for _, r := range sc.rankIDs {
		rb := job.ranks[r]
		withEnds := job.cfg.Phases && rb.boundaries.len() > 0
		seen := func(ts int64, session uint32) {
			earliest = min(earliest, ts)
			if withEnds {
				if name := rb.sessions[session]; name != "" {
					sc.noteSession(name, r, ts)
				}
			}
		}
		sc.ends = sc.ends[:0]

		t0, ss0 := len(sc.totals), len(sc.sessions)
		times, gaps, read := sc.samplesOf(rb, cutoff)
		if len(times) > 0 {
			earliest = min(earliest, times[0])
		}
		if withEnds {
			var cur sessionCursor
			front := rb.samples.frontSeq()
			for i := range rb.samples.len() {
				session := cur.at(rb.samples.sessions, front+uint64(i))
				if ts := rb.samples.at(i); ts >= cutoff {
					seen(ts, session)
				}
			}
		}

		m0 := len(sc.markers)
		if mk := &rb.markers; !withEnds && !mk.disordered && (mk.n == 0 || mk.frontNs() >= cutoff) {
			// In order and inside the window: the column as it is.
			sc.markers = sc.markers[:m0+mk.n]
			mk.copyTo(sc.markers[m0:], nil)
			if mk.n > 0 {
				earliest = min(earliest, sc.markers[m0])
			}
		} else {
			for i := range mk.len() {
				ts := mk.at(i)
				if ts < cutoff {
					continue
				}
				sc.markers = append(sc.markers, ts)
				seen(ts, mk.auxAt(i).session)
			}
		}
		markers := sc.markers[m0:]
		slices.Sort(markers)
		for i := range rb.others.len() {
			o := rb.others.at(i)
			if o.TimestampNs >= cutoff {
				seen(o.TimestampNs, o.session)
			}
		}
		for i := range rb.boundaries.len() {
			e := rb.boundaries.at(i)
			if e.TimestampNs < cutoff {
				continue
			}
			earliest = min(earliest, e.TimestampNs)
			if withEnds && e.SessionID != "" {
				sc.noteSession(e.SessionID, r, e.TimestampNs)
			}
			if job.cfg.Phases {
				sc.events = append(sc.events, *e)
			}
		}
		if job.cfg.Phases {
			if rb.phaseWaiting > 0 {
				rb.phaseWaiting = sc.parents.complete(&rb.phaseSpans)
			}
			for i := range rb.phaseSpans.len() {
				if e := rb.phaseSpans.at(i); e.EndNs >= cutoff {
					sc.spans = append(sc.spans, e.span(job.id, r, rb))
				}
			}
		}
		for _, se := range sc.ends {
			// The index only reads session, rank and time of events that
			// are not boundaries: one per (session, rank) at its newest time
			// gives it the session end.
			sc.events = append(sc.events, telemetry.Event{SchemaVersion: 3, SessionID: se.session, Rank: se.rank, TimestampNs: se.endNs, EventType: "sample"})
		}
		if rb.len() > 0 {
			ranksWithAn++
		}
		worldSize = max(worldSize, rb.worldSize)
		if len(times) > 0 {
			sc.ranks = append(sc.ranks, attribution.ColumnSeries{Rank: r, TimestampsNs: times, GapBytes: gaps, Markers: markers})
			sc.read = append(sc.read, read)
			sc.runs = append(sc.runs, seriesRuns{[2]int{t0, len(sc.totals)}, [2]int{ss0, len(sc.sessions)}})
		}
	}
	// The run tables are complete (no more appends move them): point each
	// series at its runs.
	for i := range sc.ranks {
		runs := sc.runs[i]
		sc.ranks[i].Totals = sc.totals[runs.totals[0]:runs.totals[1]]
		sc.ranks[i].Sessions = sc.sessions[runs.sessions[0]:runs.sessions[1]]
	}
	if worldSize <= 0 {
		worldSize = max(ranksWithAn, 1)
	}
	if earliest == math.MaxInt64 {
		earliest = 0
	}
	snap := Snapshot{Input: attribution.ColumnInput{
		Ranks:             sc.ranks,
		ExpectedWorldSize: worldSize,
		TraceStartNs:      max(0, earliest),
	}}
	if job.cfg.Phases && (len(sc.events) > 0 || len(sc.spans) > 0) {
		// The index sorts sc.spans in place and keeps it: it is used only
		// by this job's attribution, before the scratch is reused.
		snap.Resolver = phase.NewIndex(sc.events, sc.spans)
	}
	return snap
}

// samplesOf returns rb's samples inside the window in time order, their
// times and gaps, and appends their totals and sessions as runs to
// sc.totals and sc.sessions. Samples that arrived in time order (nearly
// always) are read from the rank's replica, which the call brings up to
// date by copying the samples that arrived since the last snapshot: the
// returned columns are the replica's, and read says which of its entries
// they are. A rank whose samples arrived out of order has them copied and
// sorted in sc.times and sc.gaps (read.rep nil).
func (sc *Scratch) samplesOf(rb *Rank, cutoff int64) (times, gaps []int64, read replicaRead) {
	c := &rb.samples
	if c.n == 0 {
		return nil, nil, read
	}
	if c.disordered {
		s0 := len(sc.times)
		sc.copySamplesSorted(rb, cutoff)
		n := len(sc.times)
		return sc.times[s0:n:n], sc.gaps[s0:n:n], read
	}
	if rb.replica == nil {
		rb.replica = &sampleReplica{}
	}
	rep := rb.replica
	rep.sync(c)
	sc.replicas = append(sc.replicas, rep)
	times, gaps = rep.live()
	cut := 0
	if c.frontNs() < cutoff {
		cut, _ = slices.BinarySearch(times, cutoff)
	}
	times, gaps = times[cut:], gaps[cut:]
	if len(times) == 0 {
		return nil, nil, read
	}
	read = replicaRead{rep: rep, from: len(rep.ts) - len(times), to: len(rep.ts)}
	// The runs of the samples from first on, numbered from it: the last
	// one starting at or before it, and those after.
	first := rep.base + uint64(cut)
	for i, run := range c.totals {
		if i+1 < len(c.totals) && c.totals[i+1].from <= first {
			continue
		}
		sc.totals = append(sc.totals, attribution.Int64Run{From: int(max(run.from, first) - first), Value: run.value})
	}
	for i, run := range c.sessions {
		if i+1 < len(c.sessions) && c.sessions[i+1].from <= first {
			continue
		}
		sc.sessions = append(sc.sessions, attribution.StringRun{From: int(max(run.from, first) - first), Value: rb.sessions[run.session]})
	}
	return times, gaps, read
}

// SortGaps gives snap's series read from replicas their SortedGaps, on up
// to workers goroutines, from each replica's sorted copy updated by the
// samples that came and left since its last round (sampleReplica.sortGaps):
// a steady job's median and MAD then cost its new samples, not its
// window. snap must be the latest snapshot taken in sc; call it without
// the store's lock, as the attribution, and before ReserveReplicas. A
// rank whose samples arrived out of order keeps SortedGaps nil (the engine
// selects its statistics itself).
func (sc *Scratch) SortGaps(snap *Snapshot, workers int) {
	series := snap.Input.Ranks
	if len(series) != len(sc.read) {
		return // not sc's latest snapshot: the engine selects the statistics itself
	}
	workers = max(1, min(workers, len(series)))
	if len(sc.batches) < workers {
		sc.batches = make([]gapBatches, workers)
	}
	parallel.For(len(series), workers, func(w, i int) {
		if rd := sc.read[i]; rd.rep != nil {
			series[i].SortedGaps = rd.rep.sortGaps(rd.from, rd.to, &sc.batches[w])
		}
	})
}

// copySamplesSorted is copySamples for samples that may be out of order or
// out of the window.
func (sc *Scratch) copySamplesSorted(rb *Rank, cutoff int64) {
	c := &rb.samples
	sc.rows = sc.rows[:0]
	var tc totalCursor
	var scur sessionCursor
	front := c.frontSeq()
	for i := range c.n {
		ts := c.at(i)
		total := tc.at(c.totals, front+uint64(i))
		session := scur.at(c.sessions, front+uint64(i))
		if ts < cutoff {
			continue
		}
		sc.rows = append(sc.rows, sampleRow{ts: ts, gap: *c.auxAt(i), total: total, session: session})
	}
	slices.SortStableFunc(sc.rows, func(a, b sampleRow) int { return cmp.Compare(a.ts, b.ts) })
	s0 := len(sc.times)
	for i, row := range sc.rows {
		sc.times = append(sc.times, row.ts)
		sc.gaps = append(sc.gaps, row.gap)
		if i == 0 || row.total != sc.rows[i-1].total {
			sc.totals = append(sc.totals, attribution.Int64Run{From: len(sc.times) - 1 - s0, Value: row.total})
		}
		if i == 0 || row.session != sc.rows[i-1].session {
			sc.sessions = append(sc.sessions, attribution.StringRun{From: len(sc.times) - 1 - s0, Value: rb.sessions[row.session]})
		}
	}
}

// totalCursor and sessionCursor read runs at sample numbers that do not
// decrease between calls.
type totalCursor struct {
	next  int
	value int64
}

func (c *totalCursor) at(runs []totalRun, seq uint64) int64 {
	for c.next < len(runs) && runs[c.next].from <= seq {
		c.value = runs[c.next].value
		c.next++
	}
	return c.value
}

type sessionCursor struct {
	next  int
	value uint32
}

func (c *sessionCursor) at(runs []sessionRun, seq uint64) uint32 {
	for c.next < len(runs) && runs[c.next].from <= seq {
		c.value = runs[c.next].session
		c.next++
	}
	return c.value
}

func (sc *Scratch) noteSession(session string, rank, ts int64) {
	for i := range sc.ends {
		if sc.ends[i].session == session {
			sc.ends[i].endNs = max(sc.ends[i].endNs, ts)
			return
		}
	}
	sc.ends = append(sc.ends, sessionEnd{session: session, rank: rank, endNs: ts})
}
