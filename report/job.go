// Package report renders a self-contained HTML report of one attributed run:
// per-rank hidden-memory lanes on a shared time axis with collective markers,
// phases and every result's interval, and a job overview (ranks × time heat
// strip, results per classification, synchronous episodes, configuration).
//
// It is pure: a Builder collects what the page draws from the run's events
// (one Add per event, so a streaming decoder can drive it), results come in
// as their JSON serialisation (ParseResult), so fields a mode adds appear on
// the page without changes here, and Render writes the page. The page needs no
// network: its plots are SVG and one PNG written here, with a little inline
// script for hover and zoom.
package report

// Job is what the page draws of a run, grouped by rank.
type Job struct {
	// StartNs is the earliest event time (the attribution's trace start);
	// the time axis reads in seconds from it. EndNs is the latest event time.
	StartNs, EndNs int64
	JobIDs         []string // distinct job ids, in order of first appearance
	WorldSize      int64    // largest world_size seen
	Events         int64
	Lanes          []Lane // ascending rank
	// MarkerLabels are the distinct collective labels; Marker.Label indexes it.
	MarkerLabels []MarkerLabel
	// PhasesKnown says phases were replayed (the --phases option).
	PhasesKnown bool
	// Ledgers are the ranks' hidden-memory ledgers (LedgerBuilder), nil
	// when the page draws none.
	Ledgers map[int64]*LaneLedger
}

// Lane is one rank's series.
type Lane struct {
	Rank int64
	Host string
	// TimesNs and HiddenBytes are the usable samples in time order: hidden
	// memory is device used − allocator reserved, 0 when negative.
	TimesNs     []int64
	HiddenBytes []int64
	Markers     []Marker // time order
	Phases      []PhaseSpan
	// Accounting is NCCL's accounting of the rank's communicators
	// (comm_memory_stats records), one series per communicator, by id.
	Accounting []AccountingSeries
}

// Marker is one collective marker of a rank.
type Marker struct {
	TimeNs int64
	Label  int32
	// End says the marker closes the op an earlier marker of the rank
	// opened (stormlog records a bare marker at a call's end, with the
	// communicator and sequence number of its start): it is drawn as that
	// op's end, not as an op of its own.
	End bool
}

// AccountingSeries is NCCL's reported memory of one communicator of a rank
// over time (nccl.comm.memory.total_bytes), in time order.
type AccountingSeries struct {
	Comm    string
	TimesNs []int64
	Bytes   []int64
}

// MarkerLabel names a marker: the op (metadata nccl.op, else the event
// type) and the communicator (metadata nccl.comm.id) when known.
type MarkerLabel struct {
	Op, Comm string
}

// String is the label as the page shows it.
func (l MarkerLabel) String() string {
	if l.Comm == "" {
		return l.Op
	}
	return l.Op + " · comm " + l.Comm
}

// PhaseSpan is one replayed phase scope of a rank.
type PhaseSpan struct {
	StartNs, EndNs int64
	Path           []string
	// SyntheticEnd says the scope never closed and ends at the rank's last
	// event.
	SyntheticEnd bool
}
