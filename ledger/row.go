package ledger

// Source says where a row's NCCL bytes come from.
type Source uint8

// NCCL sources.
const (
	// SourceNone: no NCCL memory is known at the sample (nccl_bytes 0).
	SourceNone Source = iota
	// SourceAccounting: NCCL's own accounting, the report of each counted
	// communicator that holds at the sample (Ledger.accounted).
	SourceAccounting
	// SourceAttributed: the excess of the attributed collective steps and
	// spikes active at the sample (the rank reports no tracked accounting).
	SourceAttributed
)

func (s Source) String() string {
	switch s {
	case SourceAccounting:
		return "accounting"
	case SourceAttributed:
		return "attributed"
	}
	return "none"
}

// Flag marks a row whose input was unusual; the sums hold all the same.
type Flag uint8

// Row flags (docs/evidence-mode.md §6, "Bad input").
const (
	// FlagNoReserved: the sample has no allocator_reserved_bytes; it counts
	// as 0, so hidden is device used and the allocator's reservation shows
	// as unexplained. Such samples do not set the context level.
	FlagNoReserved Flag = 1 << iota
	// FlagNegativeHidden: device used is below allocator reserved (the two
	// were read at different instants); hidden is negative and so is
	// unexplained. Such samples do not set the context level.
	FlagNegativeHidden
	// FlagAccountingAboveHidden: NCCL's accounting exceeds hidden memory
	// (stale or over-counting reports); nccl_bytes keeps NCCL's figure and
	// unexplained goes negative.
	FlagAccountingAboveHidden
)

// FlagNames are the flags' names, in bit order.
var FlagNames = []string{"no_allocator_reserved", "negative_hidden", "accounting_above_hidden"}

// CommBytes is one communicator's part of a row's NCCL bytes.
type CommBytes struct {
	CommID string
	Bytes  int64
}

// Row is the ledger of one sample of one rank: HiddenBytes = NCCLBytes +
// ContextBytes + UnexplainedBytes.
type Row struct {
	Rank                   int64
	TimestampNs            int64
	DeviceUsedBytes        int64
	AllocatorReservedBytes int64 // 0 when FlagNoReserved
	HiddenBytes            int64
	NCCLBytes              int64
	NCCLSource             Source
	ContextBytes           int64
	UnexplainedBytes       int64
	// ByComm splits NCCLBytes per communicator where known (every counted
	// communicator with accounting; the matched collective's communicator
	// of an attributed result). Valid until the next row is read.
	ByComm []CommBytes
	Flags  Flag
}

// Stats counts what the ledger met, for callers that report it.
type Stats struct {
	Rows int
	// NoReserved, NegativeHidden and AccountingAboveHidden count the rows
	// with each flag.
	NoReserved            int
	NegativeHidden        int
	AccountingAboveHidden int
	// TrackedRanks report NCCL accounting that moves; UntrackedRanks report
	// accounting that never leaves 0 (cuMem off), which is not used.
	TrackedRanks   int
	UntrackedRanks int
	// SharedComms counts communicators left out because their totals move
	// in lock step with an earlier one's (one memory manager).
	SharedComms int
}

func (s *Stats) count(r *Row) { s.countFlags(r.Flags) }

// countFlags counts a row with flags f.
func (s *Stats) countFlags(f Flag) {
	s.Rows++
	if f&FlagNoReserved != 0 {
		s.NoReserved++
	}
	if f&FlagNegativeHidden != 0 {
		s.NegativeHidden++
	}
	if f&FlagAccountingAboveHidden != 0 {
		s.AccountingAboveHidden++
	}
}
