// Package ledger closes the hidden-memory ledger (docs/evidence-mode.md §6):
// at every sample of every rank it splits hidden memory, device used minus
// allocator reserved, unclamped, into NCCL's part, the rank's context level
// and the unexplained rest, so that hidden = nccl + context + unexplained
// exactly. NCCL's part comes from NCCL's own accounting where the rank
// reports it, else from the attribution results. The package imports
// nothing from the OpenTelemetry Collector.
package ledger

import (
	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
)

// Input is one job's data for the ledger.
type Input struct {
	// Ranks holds one entry per rank, ascending by Rank.
	Ranks []RankInput
	// Results are the job's attribution results (either mode, any order);
	// those classified collective_confident or above, and persistent steps
	// classified collective_likely, count as NCCL on ranks without tracked
	// accounting (countsAsNCCL).
	Results []attribution.Result
	// PaddingNs is the interval_padding_ns the results were made with: a
	// result's samples lie in [IntervalStartNs+PaddingNs,
	// IntervalEndNs-PaddingNs]; a persistent step's level begins at the
	// first sample at or after IntervalEndNs-PaddingNs (a polled step's
	// claim ends at its op, before that sample: evidence-mode §7.6).
	PaddingNs int64
}

// RankInput is one rank's columns.
type RankInput struct {
	Rank    int64
	Samples Samples
	// Accounting holds NCCL's reported memory per communicator of this
	// rank, each series in time order.
	Accounting []evidence.AccountingSeries
	// MarkersNs are the start times of the rank's collective markers,
	// ascending (nil when unknown): the context level is the rank's hidden
	// memory before its first collective of a session when enough samples
	// precede it.
	MarkersNs []int64
	// Contexts are levels set by an earlier ledger of the rank (Ledger.
	// Contexts): a caller that reads a sliding window of a job keeps them,
	// so that a session's level stays the one of its start once the start
	// has left the window, and a leak is never absorbed into it.
	Contexts []SessionLevel
}

// SessionLevel is a rank's context level in one session.
type SessionLevel struct {
	Session string
	Bytes   int64
}

// Samples are a rank's `sample` records with a device_used_bytes, as
// parallel columns in time order (ties in input order).
type Samples struct {
	TimesNs   []int64
	UsedBytes []int64
	// ReservedBytes is allocator_reserved_bytes (0 where NoReserved).
	ReservedBytes []int64
	// NoReserved is nil when every sample has allocator_reserved_bytes, else
	// true where a sample lacks it.
	NoReserved []bool
	// Session indexes SessionIDs; nil when every sample has session
	// SessionIDs[0] or there are none.
	Session    []int32
	SessionIDs []string
}

// Len is the number of samples.
func (s *Samples) Len() int { return len(s.TimesNs) }

func (s *Samples) session(i int) int32 {
	if s.Session == nil {
		return 0
	}
	return s.Session[i]
}

func (s *Samples) noReserved(i int) bool { return s.NoReserved != nil && s.NoReserved[i] }

// hidden is sample i's hidden memory (device used less allocator reserved,
// or device used when it has none) and the flags that say which.
func (s *Samples) hidden(i int) (int64, Flag) {
	var f Flag
	hidden := s.UsedBytes[i]
	if s.noReserved(i) {
		f |= FlagNoReserved
	} else {
		hidden -= s.ReservedBytes[i]
	}
	if hidden < 0 {
		f |= FlagNegativeHidden
	}
	return hidden, f
}
