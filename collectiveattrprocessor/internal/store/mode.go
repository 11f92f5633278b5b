package store

import (
	"time"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
)

// Mode is what a store buffers for its attribution mode beyond what every
// mode keeps (samples, other stormlog records, phase boundaries, phase
// spans): markers as the mode's engine reads them, and NCCL's accounting
// when it reads it. Config.Mode chooses it once; the store asks it, never
// which mode runs. A mode that reads the buffers differently is a new
// Mode here beside the processor's engine for it.
type Mode interface {
	// Name is the mode's name (attribution.ModeReference,
	// attribution.ModeEvidence), kept in checkpoints: a job is restored
	// only into the mode that buffered it.
	Name() string

	// readStormlog reads what a stormlog record gives the mode, before
	// its duplicate check and its push.
	readStormlog(job *Job, rec *ingest.Record) stormlogRead
	// holds reports whether rb already buffers what rec would add.
	holds(rb *rankBuffer, rec *ingest.Record, read *stormlogRead) bool
	pushMarkerSpan(s *Store, job *Job, rb *rankBuffer, rec *ingest.Record) int
	addMarkerRun(s *Store, run *ingest.MarkerRun, now time.Time)
	pushAccounting(s *Store, job *Job, rb *rankBuffer, rec *ingest.Record) int
	pushStormlog(s *Store, job *Job, rb *rankBuffer, rec *ingest.Record, read *stormlogRead) int
}

// The modes.
var (
	// ReferenceMode buffers marker times (stormlog's reference).
	ReferenceMode Mode = referenceMode{}
	// EvidenceMode buffers marker intervals with their collective
	// identity, and NCCL's memory accounting (docs/evidence-mode.md).
	EvidenceMode Mode = evidenceMode{}
)

// stormlogRead is what a stormlog record gives a mode beyond the
// reference's classification (ingest.Record.Stormlog): in evidence mode,
// a sample, an accounting point or a marker interval.
type stormlogRead struct {
	kind  readKind
	comm  string
	bytes int64
	mk    evidenceMarker
}

type readKind uint8

const (
	readNone readKind = iota
	readSample
	readAccounting
	readInterval
)

type referenceMode struct{}

func (referenceMode) Name() string { return attribution.ModeReference }

func (referenceMode) readStormlog(*Job, *ingest.Record) stormlogRead { return stormlogRead{} }

func (referenceMode) holds(rb *rankBuffer, rec *ingest.Record, _ *stormlogRead) bool {
	return rb.holdsReference(rec)
}

func (referenceMode) pushMarkerSpan(s *Store, job *Job, rb *rankBuffer, rec *ingest.Record) int {
	return s.pushMarkers(job, rb, rec)
}

func (referenceMode) addMarkerRun(s *Store, run *ingest.MarkerRun, now time.Time) {
	s.addMarkerTimes(run, now)
}

// pushAccounting buffers nothing: the reference does not read NCCL's
// accounting.
func (referenceMode) pushAccounting(*Store, *Job, *rankBuffer, *ingest.Record) int { return 0 }

func (referenceMode) pushStormlog(s *Store, job *Job, rb *rankBuffer, rec *ingest.Record, _ *stormlogRead) int {
	return s.pushStormlog(job, rb, rec)
}

type evidenceMode struct{}

func (evidenceMode) Name() string { return attribution.ModeEvidence }

func (evidenceMode) readStormlog(job *Job, rec *ingest.Record) stormlogRead {
	return job.readStormlogEvidence(rec)
}

func (evidenceMode) holds(rb *rankBuffer, rec *ingest.Record, read *stormlogRead) bool {
	return rb.holdsEvidence(rec, read)
}

func (evidenceMode) pushMarkerSpan(s *Store, job *Job, rb *rankBuffer, rec *ingest.Record) int {
	return s.pushSpanEvidence(job, rb, rec)
}

// addMarkerRun buffers the spans one at a time: a span's collective is
// interned per marker.
func (evidenceMode) addMarkerRun(s *Store, run *ingest.MarkerRun, now time.Time) {
	s.addRecords(run, 0, now)
}

func (evidenceMode) pushAccounting(s *Store, job *Job, rb *rankBuffer, rec *ingest.Record) int {
	return s.pushAccounting(job, rb, rec)
}

func (evidenceMode) pushStormlog(s *Store, job *Job, rb *rankBuffer, rec *ingest.Record, read *stormlogRead) int {
	return s.pushStormlogEvidence(job, rb, rec, read)
}
