package evidence

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Metadata keys of the collective identity and of NCCL's memory accounting
// (docs/evidence-mode.md §2).
const (
	KeyCommID          = "nccl.comm.id"
	KeySeq             = "nccl.seq"
	KeyOp              = "nccl.op"
	KeyMessageBytes    = "nccl.message_bytes"
	KeyCommNRanks      = "nccl.comm.nranks"
	KeyCommRanks       = "nccl.comm.ranks"
	KeyPeer            = "nccl.peer"
	KeyDurationNs      = "nccl.duration_ns"
	KeyTimeApproximate = "nccl.time_approximate"
	KeyMemoryTotal     = "nccl.comm.memory.total_bytes"
	// AccountingEventType is the stormlog event_type of NCCL's accounting
	// records.
	AccountingEventType = "comm_memory_stats"
)

// IsAccountingType reports whether a stormlog event_type names NCCL's
// accounting records (comm_memory_stats, as the reference compares event
// types: trimmed, any case).
func IsAccountingType(t string) bool {
	return t == AccountingEventType || strings.EqualFold(telemetry.TrimSpace(t), AccountingEventType)
}

// AccountingOf reads the point an accounting record e carries: its
// communicator and the bytes NCCL reports for it, or UntrackedBytes when the
// record says cuMem is off (nccl.cumem_enabled false); ok is false when
// either is missing or the count is negative. The window reads every
// accounting record (the CLI's and the processor's) with it.
func AccountingOf(e *telemetry.Event) (comm string, total int64, ok bool) {
	return accountingPoint(readRecordMetadata(e))
}

func accountingPoint(md recordMetadata) (comm string, total int64, ok bool) {
	comm, okC := md.comm.AsString()
	total, okT := metadataValueInt(md.total)
	ok = okC && okT && total >= 0
	if on, known := md.cumem.AsBool(); known && !on && ok {
		total = UntrackedBytes
	}
	return comm, total, ok
}

// MetadataInt reads an integral metadata value: a JSON integer
// (json.Number), a Go integer, or a float with an integral value. The
// processor's store reads marker metadata with it too, so both read the
// same records alike.
func MetadataInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		return numberInt(x)
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case float64:
		return floatInt(x)
	}
	return 0, false
}

func floatInt(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}
