// Package evidence is the evidence attribution mode (docs/evidence-mode.md):
// it decides which hidden-memory changes of a distributed job come from NCCL
// collective communication using the collectives' identity (communicator,
// sequence number, op, interval, members), each rank's own baseline, and
// NCCL's own memory accounting when the job exports it.
//
// The engine works on compact per-rank columns (Input), not on telemetry
// events: the window (package window) buffers records as columns and
// hands the engine an Input; this package reads single records for it
// (MetadataMarker, AccountingOf).
// The package imports nothing from the OpenTelemetry Collector.
package evidence

// NoCollective is a marker's Collective index when the marker carries no
// identity (a bare timestamp, as in the reference mode).
const NoCollective int32 = -1

// Input is one job's data for an evaluation.
type Input struct {
	// Ranks holds one entry per rank, ascending by Rank.
	Ranks []RankData
	// Collectives is the job's table of collective instances, one per
	// (communicator, op, sequence number); markers point into it.
	Collectives []Collective
	// ExpectedWorldSize is the largest world_size seen (or the number of
	// ranks when none was).
	ExpectedWorldSize int64
	// TraceStartNs is the earliest event time; no interval starts before it.
	TraceStartNs int64
}

// RankData is one rank's columns.
type RankData struct {
	Rank int64
	// Host is the rank's host name ("" or "unknown": not known). Ranks of
	// one host share its clock: its skew is estimated from all of their
	// markers (evidence-mode §7.5).
	Host string
	// Samples in time order (ties in input order).
	Samples Samples
	// Markers sorted by StartNs.
	Markers []Marker
	// Accounting holds NCCL's reported memory per communicator of this rank,
	// each series in time order.
	Accounting []AccountingSeries
	// DeviceWideThroughNs is the time of the rank's newest sample whose
	// used memory the caller knows to be the whole device's, other
	// processes' memory included (0: none): a result whose interval starts
	// by then carries ReasonDeviceWideMemory. Samples of unknown scope (a
	// stormlog record's device_used_bytes) count as none.
	DeviceWideThroughNs int64
	// NewestHiddenBytes is the hidden memory (device used less allocator
	// reserved) of the rank's newest sample, at NewestHiddenNs (0: not
	// known), not clamped at 0 as Samples.GapBytes are: a sample read at
	// another instant than its reservation can be below it. Evidence mode
	// does not read it; the processor's ledger gauges report that sample's
	// parts with it, so that they add up to its hidden memory exactly.
	NewestHiddenNs, NewestHiddenBytes int64
	// Baseline, when not nil, keeps the rank's analysis (baseline
	// medians, steps, baseline, spreads) from one Attribute to the next,
	// which then recomputes only what the samples' changes reach. A caller that evaluates the same ranks
	// again and again (the processor) keeps one per rank; the results are
	// the same with or without it.
	Baseline *BaselineCache
}

// Samples are the usable `sample` records of a rank as parallel columns.
type Samples struct {
	TimesNs []int64
	// GapBytes is max(0, device_used - allocator_reserved), as the reference.
	GapBytes []int64
	// TotalBytes is device_total_bytes, or 0 when unknown.
	TotalBytes []int64
	// Session indexes SessionIDs (phase resolution); nil when every sample
	// has session SessionIDs[0] or there are none.
	Session    []int32
	SessionIDs []string
	// FirstSeq, when Sequenced, numbers TimesNs[0] in the order the rank's
	// samples were pushed: sample i is push FirstSeq+i, and one number
	// names one sample (its time and gap) for as long as the caller keeps
	// the rank's BaselineCache. The cache then finds the samples it holds
	// by their numbers instead of comparing every one.
	FirstSeq  uint64
	Sequenced bool
}

// Len is the number of samples.
func (s *Samples) Len() int { return len(s.TimesNs) }

// SessionOf is the session id of sample i ("" when unknown).
func (s *Samples) SessionOf(i int) string {
	switch {
	case len(s.SessionIDs) == 0:
		return ""
	case s.Session == nil:
		return s.SessionIDs[0]
	}
	return s.SessionIDs[s.Session[i]]
}

// Marker is one rank-local collective marker: an interval on that rank's
// clock.
type Marker struct {
	StartNs int64
	// EndNs is StartNs + nccl.duration_ns (StartNs when unknown).
	EndNs int64
	// Collective indexes Input.Collectives, or NoCollective.
	Collective int32
	// Approximate is set when the marker's time is only known to lie in
	// [StartNs, EndNs] (nccl.time_approximate).
	Approximate bool
}

// Collective is one collective instance of a job: the same (CommID, Op, Seq) on
// every member rank.
type Collective struct {
	CommID       string
	Seq          int64
	Op           string
	MessageBytes int64
	// NRanks is nccl.comm.nranks (0 when not given).
	NRanks int64
	// Ranks are the members' global ranks when the markers list them
	// (nccl.comm.ranks), or when an earlier marker of the communicator
	// did (a membership declared once); nil otherwise. Read-only: instances
	// of one communicator share it.
	Ranks []int64
	// inherited marks Ranks taken from the communicator's declaration, to
	// be replaced by a list the instance's own markers give.
	inherited bool
}

// AccountingSeries is NCCL's reported device memory of one communicator on
// one rank (nccl.comm.memory.total), in time order.
type AccountingSeries struct {
	CommID  string
	TimesNs []int64
	Bytes   []int64
}
