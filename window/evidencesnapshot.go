package window

import (
	"cmp"
	"math"
	"slices"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
)

// EvidenceScratch is memory an EvidenceSnapshot is built in, beside the
// Scratch of the reference columns it shares; valid until either is used
// again.
type EvidenceScratch struct {
	ranks      []evidence.RankData
	totals     []int64
	sessions   []int32
	sessionIDs []string
	markers    []evidence.Marker
	series     []evidence.AccountingSeries
	acctTimes  []int64
	acctBytes  []int64
	remap      []int32
	declared   []int64
	// expand are the ranks (indexes in ranks) whose samples' totals and
	// sessions are still to be expanded from their series' runs, and
	// those series.
	expand []seriesOf
	// uniform holds columns of one value each: the totals of the ranks
	// whose device total is one value throughout (most ranks, the same
	// for every rank of a device model) share one, read only.
	uniform []uniformColumn
}

// uniformColumn is a column of value, as long as the longest one asked of
// it; slices of it are handed out, so its values never change.
type uniformColumn struct {
	value int64
	col   []int64
}

// maxUniformColumns bounds the uniform columns kept: a job whose ranks
// report more distinct device totals has its other ranks' totals expanded.
const maxUniformColumns = 8

// seriesOf is a rank of an EvidenceSnapshot and its reference series.
type seriesOf struct {
	rank   int
	series *attribution.ColumnSeries
}

// EvidenceSnapshot is a job's evaluation input in evidence mode.
type EvidenceSnapshot struct {
	Input    evidence.Input
	Resolver attribution.PhaseResolver
	// WorldSizeDisagreement lists the world sizes the job's ranks declare
	// and by how many ranks, when they differ and the job's previous
	// snapshot did not report the same ("" otherwise): a disagreement is
	// reported once, not at every evaluation. Input.ExpectedWorldSize is
	// the size most ranks declare (agreedWorldSize).
	WorldSizeDisagreement string
}

// EvidenceSnapshot is Snapshot for evidence mode: the same samples (their
// time and gap columns shared, not copied), each rank's markers as
// intervals with their collective (in evidence mode every marker, of a
// span, a stormlog record or an Inspector record, is buffered as one),
// NCCL's accounting series, and the job's collectives that the markers
// inside the window refer to. Ranks are those with samples, markers or
// accounting (a rank without samples still holds members' markers); the
// trace start is the earliest buffered time, not below 0; the world size
// is the one most ranks declare (agreedWorldSize). Each rank with samples
// brings its baseline cache, which the engine updates: evaluations of a
// job must not overlap (they already share sc and es).
func (job *Job) EvidenceSnapshot(sc *Scratch, es *EvidenceScratch) EvidenceSnapshot {
	snap := job.EvidenceRead(sc, es)
	es.ExpandSamples(&snap)
	return snap
}

// EvidenceRead is the part of EvidenceSnapshot that reads the job (under
// the store's lock, or of a detached job): its samples have their times
// and gaps, and ExpandSamples, which reads only the copy, gives them their
// totals and sessions, one value per sample, without the lock.
func (job *Job) EvidenceRead(sc *Scratch, es *EvidenceScratch) EvidenceSnapshot {
	ref := job.Snapshot(sc)
	cutoff := job.cutoffNs()

	nMarkers, nAcct := 0, 0
	es.expand = es.expand[:0]
	for _, rb := range job.ranks {
		if rb.ev != nil {
			nMarkers += rb.ev.markers.len()
			for i := range rb.ev.accounting {
				nAcct += rb.ev.accounting[i].len()
			}
		}
	}
	// Sized once, so that the per-rank sub-slices stay valid.
	es.markers = slices.Grow(es.markers[:0], nMarkers)
	es.acctTimes = slices.Grow(es.acctTimes[:0], nAcct)
	es.acctBytes = slices.Grow(es.acctBytes[:0], nAcct)
	es.series = es.series[:0]
	es.ranks = es.ranks[:0]
	var table []evidence.Collective
	if job.collectives != nil {
		table = job.collectives.List
	}
	es.remap = slices.Grow(es.remap[:0], len(table))[:len(table)]
	for i := range es.remap {
		es.remap[i] = -1
	}
	var collectives []evidence.Collective

	earliest := int64(math.MaxInt64)
	refEntries := false
	es.declared = es.declared[:0]
	series := ref.Input.Ranks
	next := 0
	for _, r := range sc.rankIDs {
		rb := job.ranks[r]
		es.declared = append(es.declared, rb.worldSize)
		if rb.len() > rb.ev.len() {
			refEntries = true
		}
		rd := evidence.RankData{Rank: r, Host: rb.host, DeviceWideThroughNs: rb.deviceWideThroughNs,
			NewestHiddenNs: rb.newestHiddenNs, NewestHiddenBytes: rb.newestHidden}
		if next < len(series) && series[next].Rank == r {
			rd.Samples = evidence.Samples{TimesNs: series[next].TimestampsNs, GapBytes: series[next].GapBytes}
			if next < len(sc.read) {
				if read := sc.read[next]; read.rep != nil && len(sc.read) == len(series) {
					// The replica's entries are the rank's samples in push
					// order, numbered from its base: the cache takes the
					// ones it holds by number.
					rd.Samples.FirstSeq = read.rep.base + uint64(read.from-read.rep.start)
					rd.Samples.Sequenced = true
				}
			}
			es.expand = append(es.expand, seriesOf{rank: len(es.ranks), series: &series[next]})
			if !job.cfg.Stream {
				rd.Baseline = &rb.evidence().baseline
			}
			next++
		}
		m0 := len(es.markers)
		if ev := rb.ev; ev != nil {
			for i := range ev.markers.len() {
				ts := ev.markers.at(i)
				if ts < cutoff {
					continue
				}
				earliest = min(earliest, ts)
				m := ev.markers.auxAt(i)
				c := m.collective
				if c != evidence.NoCollective {
					if es.remap[c] < 0 {
						es.remap[c] = int32(len(collectives))
						collectives = append(collectives, table[c])
					}
					c = es.remap[c]
				}
				es.markers = append(es.markers, evidence.Marker{StartNs: ts, EndNs: m.endNs, Collective: c, Approximate: m.approximate()})
			}
			a0 := len(es.series)
			for i := range ev.accounting {
				a := &ev.accounting[i]
				t0 := len(es.acctTimes)
				for j := range a.len() {
					if ts := a.at(j); ts >= cutoff {
						es.acctTimes = append(es.acctTimes, ts)
						es.acctBytes = append(es.acctBytes, *a.auxAt(j))
						earliest = min(earliest, ts)
					}
				}
				if len(es.acctTimes) > t0 {
					as := evidence.AccountingSeries{CommID: a.commID, TimesNs: es.acctTimes[t0:], Bytes: es.acctBytes[t0:]}
					if a.disordered {
						sortAccounting(&as)
					}
					es.series = append(es.series, as)
				}
			}
			if len(es.series) > a0 {
				rd.Accounting = es.series[a0:len(es.series):len(es.series)]
			}
		}
		rd.Markers = es.markers[m0:len(es.markers):len(es.markers)]
		slices.SortStableFunc(rd.Markers, func(a, b evidence.Marker) int { return cmp.Compare(a.StartNs, b.StartNs) })
		if rd.Samples.Len() > 0 || len(rd.Markers) > 0 || len(rd.Accounting) > 0 {
			es.ranks = append(es.ranks, rd)
		}
	}
	if refEntries {
		earliest = min(earliest, ref.Input.TraceStartNs)
	}
	if earliest == math.MaxInt64 {
		earliest = 0
	}
	worldSize, disagreement := agreedWorldSize(es.declared)
	if disagreement == job.worldSizeNote {
		disagreement = ""
	} else {
		job.worldSizeNote = disagreement
	}
	if worldSize <= 0 {
		worldSize = int64(max(len(es.ranks), 1))
	}
	job.compactCollectives(es.remap, len(collectives))
	return EvidenceSnapshot{
		Input: evidence.Input{
			Ranks:             es.ranks,
			Collectives:       collectives,
			ExpectedWorldSize: worldSize,
			TraceStartNs:      max(0, earliest),
		},
		Resolver:              ref.Resolver,
		WorldSizeDisagreement: disagreement,
	}
}

// ExpandSamples gives the samples of snap, an EvidenceRead of es, their
// totals and sessions from the runs of the reference series they were read
// with. It reads only the copy: call it without the store's lock.
func (es *EvidenceScratch) ExpandSamples(snap *EvidenceSnapshot) {
	n := 0
	for _, e := range es.expand {
		n += len(e.series.TimestampsNs)
	}
	// Sized once, so that the per-rank sub-slices stay valid.
	es.totals = slices.Grow(es.totals[:0], n)
	es.sessions = slices.Grow(es.sessions[:0], n)
	es.sessionIDs = es.sessionIDs[:0]
	for _, e := range es.expand {
		es.expandSeries(&snap.Input.Ranks[e.rank].Samples, e.series)
	}
	es.expand = es.expand[:0]
}

// expandSeries gives smp, the evidence samples of reference column series
// cs (sharing its time and gap columns), the totals and sessions expanded
// from cs's runs.
func (es *EvidenceScratch) expandSeries(smp *evidence.Samples, cs *attribution.ColumnSeries) {
	n := len(cs.TimestampsNs)
	if total, ok := uniformTotal(cs.Totals); ok {
		smp.TotalBytes = es.uniformColumn(total, n)
	}
	if smp.TotalBytes == nil {
		t0 := len(es.totals)
		es.totals = es.totals[:t0+n]
		smp.TotalBytes = es.totals[t0 : t0+n : t0+n]
		expandRuns(smp.TotalBytes, cs.Totals, func(r attribution.Int64Run) (int, int64) { return r.From, r.Value })
	}
	switch len(cs.Sessions) {
	case 0:
	case 1:
		if cs.Sessions[0].From == 0 {
			s0 := len(es.sessionIDs)
			es.sessionIDs = append(es.sessionIDs, cs.Sessions[0].Value)
			smp.SessionIDs = es.sessionIDs[s0:len(es.sessionIDs):len(es.sessionIDs)]
			break
		}
		fallthrough
	default:
		// Session ids in first-seen order;
		// a sample before the first run has session "".
		var ids []string
		if cs.Sessions[0].From > 0 {
			ids = append(ids, "")
		}
		idx := make([]int32, len(cs.Sessions))
		for i, run := range cs.Sessions {
			j := slices.Index(ids, run.Value)
			if j < 0 {
				ids = append(ids, run.Value)
				j = len(ids) - 1
			}
			idx[i] = int32(j)
		}
		s0 := len(es.sessions)
		es.sessions = es.sessions[:s0+n]
		smp.Session = es.sessions[s0 : s0+n : s0+n]
		clear(smp.Session)
		for i, run := range cs.Sessions {
			end := n
			if i+1 < len(cs.Sessions) {
				end = cs.Sessions[i+1].From
			}
			for k := run.From; k < end; k++ {
				smp.Session[k] = idx[i]
			}
		}
		smp.SessionIDs = ids
	}
}

// uniformTotal is the one value of every sample whose totals are runs
// (0 before the first run); false when they differ.
func uniformTotal(runs []attribution.Int64Run) (int64, bool) {
	switch {
	case len(runs) == 0:
		return 0, true
	case len(runs) == 1 && runs[0].From == 0:
		return runs[0].Value, true
	}
	return 0, false
}

// uniformColumn returns n values v from a column es keeps for v, or nil
// when es keeps maxUniformColumns columns of other values.
func (es *EvidenceScratch) uniformColumn(v int64, n int) []int64 {
	i := slices.IndexFunc(es.uniform, func(u uniformColumn) bool { return u.value == v })
	if i < 0 {
		if len(es.uniform) == maxUniformColumns {
			return nil
		}
		es.uniform = append(es.uniform, uniformColumn{value: v})
		i = len(es.uniform) - 1
	}
	u := &es.uniform[i]
	for len(u.col) < n {
		// Beyond the slices handed out: appending in place changes none.
		u.col = append(u.col, v)
	}
	return u.col[:n:n]
}

// expandRuns writes runs (a value from its index to the next run's; 0
// before the first) into dst.
func expandRuns[R any](dst []int64, runs []R, of func(R) (int, int64)) {
	if len(runs) == 0 {
		clear(dst)
		return
	}
	first, _ := of(runs[0])
	clear(dst[:first])
	for i, run := range runs {
		from, v := of(run)
		end := len(dst)
		if i+1 < len(runs) {
			end, _ = of(runs[i+1])
		}
		for k := from; k < end; k++ {
			dst[k] = v
		}
	}
}

func sortAccounting(a *evidence.AccountingSeries) {
	type point struct{ ts, bytes int64 }
	pts := make([]point, len(a.TimesNs))
	for i := range pts {
		pts[i] = point{a.TimesNs[i], a.Bytes[i]}
	}
	slices.SortStableFunc(pts, func(x, y point) int { return cmp.Compare(x.ts, y.ts) })
	for i, p := range pts {
		a.TimesNs[i], a.Bytes[i] = p.ts, p.bytes
	}
}

// compactCollectives drops the table entries no buffered marker refers to
// once they are most of it: a long job's collective identities
// would otherwise grow with its length, not its window. remap maps each
// used entry to its new index (-1: unused), as the snapshot numbered them.
func (j *Job) compactCollectives(remap []int32, used int) {
	t := j.collectives
	if t == nil || len(t.List) <= 2*used+64 {
		return
	}
	kept := make([]evidence.Collective, used)
	for old, nw := range remap {
		if nw >= 0 {
			kept[nw] = t.List[old]
		}
	}
	t.Reset(kept)
	for _, rb := range j.ranks {
		if rb.ev == nil {
			continue
		}
		for i := range rb.ev.markers.len() {
			m := rb.ev.markers.auxAt(i)
			if m.collective != evidence.NoCollective {
				m.collective = remap[m.collective]
			}
		}
	}
}
