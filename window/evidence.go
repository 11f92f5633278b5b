package window

import (
	"math"
	"strings"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// evidenceRank is what evidence mode buffers for a rank beside the
// reference's columns (nil in reference mode, where it costs a pointer):
// its markers as intervals with their collective identity, and NCCL's
// memory accounting per communicator. Its entries count against
// max_events_per_rank and leave with the window like any other.
type evidenceRank struct {
	// markers are keyed by start time; the identity is an index into the
	// job's collectives table.
	markers timedRing[evidenceMarker]
	// accounting holds one series per communicator, in first-seen order.
	accounting []accountingSeries
	// spans are the marker spans of the buffered markers, in marker order;
	// spanFront is the sequence number of its front entry
	// (evidencespans.go).
	spans     ring[SpanRef]
	spanFront uint32
	// baseline keeps the engine's analysis of the rank's samples (their
	// baseline medians, steps, baseline) between evaluations (48 bytes a
	// sample). The engine checks it against
	// the samples it is given, so the buffers never update it; a restored
	// store starts it empty and the first evaluation fills it.
	baseline evidence.BaselineCache
}

// evidenceMarker is a buffered marker beside its start time: its end, its
// collective (an index into the job's table, or evidence.NoCollective),
// and flags: whether its time is approximate, and its span
// (evidencespans.go).
type evidenceMarker struct {
	endNs      int64
	collective int32
	flags      uint32
}

// accountingSeries is nccl.comm.memory.total of one communicator: times
// and bytes.
type accountingSeries struct {
	commID string
	timedRing[int64]
}

func (e *evidenceRank) len() int {
	if e == nil {
		return 0
	}
	n := e.markers.len()
	for i := range e.accounting {
		n += e.accounting[i].len()
	}
	return n
}

// oldest returns the earliest front time of the rings, and which: -1 the
// markers, else the accounting series' index; ok false when all are empty.
func (e *evidenceRank) oldest() (which int, ts int64, ok bool) {
	if e == nil {
		return 0, 0, false
	}
	ts = math.MaxInt64
	if e.markers.len() > 0 {
		which, ts, ok = -1, e.markers.frontNs(), true
	}
	for i := range e.accounting {
		if a := &e.accounting[i]; a.len() > 0 && a.frontNs() < ts {
			which, ts, ok = i, a.frontNs(), true
		}
	}
	return which, ts, ok
}

func (e *evidenceRank) dropOldest(which int) {
	if which < 0 {
		e.markers.dropFront(1)
		e.releaseSpans()
		return
	}
	e.accounting[which].dropFront(1)
}

// trim drops the entries before cutoffNs at the front of each ring.
func (e *evidenceRank) trim(cutoffNs int64) int {
	if e == nil {
		return 0
	}
	k := e.markers.older(cutoffNs)
	e.markers.dropFront(k)
	if k > 0 {
		e.releaseSpans()
	}
	n := k
	for i := range e.accounting {
		a := &e.accounting[i]
		k := a.older(cutoffNs)
		a.dropFront(k)
		n += k
	}
	return n
}

// readStormlogEvidence reads rec as evidence mode reads a record
// (docs/evidence-mode.md §2): a usable sample is a sample; otherwise a comm_memory_stats record with a
// communicator and a byte count is an accounting point, and a record with
// a collective identity (nccl.comm.id and nccl.seq) or a collective token
// is a marker interval, its collective interned in the job's table.
func (j *Job) readStormlogEvidence(rec *Record) stormlogRead {
	e := &rec.Event
	switch {
	case rec.Stormlog&StormlogSample != 0:
		return stormlogRead{kind: readSample}
	case evidence.IsAccountingType(e.EventType):
		if comm, total, ok := evidence.AccountingOf(e); ok {
			return stormlogRead{kind: readAccounting, comm: comm, bytes: total}
		}
	default:
		if mk, ok := j.markerOf(e); ok {
			return stormlogRead{kind: readInterval, mk: mk}
		}
	}
	return stormlogRead{}
}

// pushStormlogEvidence buffers a stormlog record as readStormlogEvidence
// read it, so that on_job_end equals the CLI's `--mode evidence` batch
// result. Phase boundaries feed the phase index as in the reference mode,
// and a record that is none of these counts for the trace start.
func (j *Job) pushStormlogEvidence(rb *Rank, rec *Record, r *stormlogRead) int {
	e := &rec.Event
	maxCap := j.cfg.MaxEventsPerRank
	n := 0
	switch r.kind {
	case readSample:
		j.pushStormlogSample(rb, e)
		n++
	case readAccounting:
		j.makeRoom(rb)
		rb.evidence().series(r.comm).push(e.TimestampNs, r.bytes, maxCap)
		n++
	case readInterval:
		j.makeRoom(rb)
		rb.evidence().markers.push(e.TimestampNs, r.mk, maxCap)
		n++
	}
	return j.pushBoundaryOrOther(rb, rec, n)
}

func (rb *Rank) evidence() *evidenceRank {
	if rb.ev == nil {
		rb.ev = &evidenceRank{}
	}
	return rb.ev
}

func (e *evidenceRank) series(comm string) *accountingSeries {
	for i := range e.accounting {
		if e.accounting[i].commID == comm {
			return &e.accounting[i]
		}
	}
	// A copy: the id may point into its record's request or read buffer.
	e.accounting = append(e.accounting, accountingSeries{commID: strings.Clone(comm)})
	return &e.accounting[len(e.accounting)-1]
}

// markerOf reads a record's marker with evidence.MetadataMarker, its collective interned in the job's table;
// false when the record has neither an identity nor a collective token.
func (j *Job) markerOf(e *telemetry.Event) (evidenceMarker, bool) {
	// The collective token is looked for only in a record without an
	// identity: NCCL's records carry one.
	m, ok := evidence.MetadataMarker(e, func() bool { return attribution.IsMarker(e) }, j.table())
	if !ok {
		return evidenceMarker{}, false
	}
	mk := evidenceMarker{endNs: m.EndNs, collective: m.Collective}
	if m.Approximate {
		mk.flags = evApproximate
	}
	return mk, true
}

// table is the job's collectives table, made on first use.
func (j *Job) table() *evidence.CollectiveTable {
	if j.collectives == nil {
		j.collectives = &evidence.CollectiveTable{}
	}
	return j.collectives
}
