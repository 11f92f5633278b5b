package window

import (
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Stream is the window of one job fed stormlog records one at a time, in
// the order a file holds them: the CLI's way from a file to an engine.
// Nothing leaves it (Unbounded), and every record is new: each stands at
// its own position of the file, so a line a file holds twice counts
// twice, as stormlog counts it (the duplicate rule, duplicates.go). It
// buffers what the processor's window buffers of the same records, so an
// engine reads the same input from both.
type Stream struct {
	job    *Job
	counts Counts
	rec    Record
	ledger bool // KeepLedger
}

// NewStream returns an empty stream whose window buffers what mode reads
// (nil: ReferenceMode). With phases it keeps the phase boundaries for the
// snapshot's phase index.
func NewStream(mode Mode, phases bool) *Stream {
	s := &Stream{}
	s.job = NewJob("", Unbounded(mode, phases), &s.counts)
	s.rec.Kind = KindStormlog
	return s
}

// Add buffers a validated stormlog record. The window keeps no reference
// to e.
func (s *Stream) Add(e *telemetry.Event) {
	rb := s.job.Rank(e.Rank)
	if rb == nil {
		rb = s.job.AddRank(e.Rank)
	}
	rec := &s.rec
	rec.Rank, rec.WorldSize, rec.TimestampNs = e.Rank, e.WorldSize, e.TimestampNs
	rec.Event = *e
	rec.Stormlog = s.job.cfg.Mode.classify(e)
	if _, added := s.job.Add(rb, rec); added > 0 {
		rb.Note(e.WorldSize, "")
	}
	if s.ledger {
		rb.addLedger(e)
	}
}

// AddEvents buffers events in order.
func (s *Stream) AddEvents(events []telemetry.Event) {
	for i := range events {
		s.Add(&events[i])
	}
}

// Job is the stream's window, to snapshot once the last record is added.
func (s *Stream) Job() *Job { return s.job }
