package kineto

import (
	"errors"
	"fmt"

	"github.com/collectiveattr/collectiveattr/markers"
)

// Trace is what one profiler trace says about its rank.
type Trace struct {
	// Rank is distributedInfo.rank (else the Rank of the trace's ops on the
	// default process group); HasRank is false when the trace names none.
	Rank    int64
	HasRank bool
	// Markers are the trace's collective ops in trace order; Rank is set
	// on each when HasRank.
	Markers []markers.Marker
	// Phases are the trace's step and record_function ranges.
	Phases []Phase
	// Memory are the allocator figures of its [memory] events on CUDA
	// devices, in trace order.
	Memory []MemorySample
	// Legacy is set for the bare-array format of builds without Kineto.
	Legacy bool
	Stats  Stats
}

// Phase is one named CPU range: ProfilerStep#N or a record_function range.
type Phase struct {
	Name string
	// Path is the names of the ranges that contain it on its thread, then
	// its own, outermost first.
	Path           []string
	ThreadID       int64
	StartNs, EndNs int64
}

// MemorySample is the caching allocator's state after one [memory] event.
type MemorySample struct {
	TimeNs         int64
	DeviceID       int64
	ReservedBytes  int64
	AllocatedBytes int64
}

// Stats counts what a Read saw.
type Stats struct {
	Events  int // trace events read
	Kernels int // NCCL kernels
	CPUOps  int // record_param_comms ops
	// Skipped counts events left out because a field they need has the
	// wrong type; FirstSkip describes the first, which ends at byte
	// FirstSkipOffset of the trace.
	Skipped         int
	FirstSkip       string
	FirstSkipOffset int64
}

// ErrRelativeTimes: the trace's times count from the profiler's start
// (the legacy format, or a trace without baseTimeNanoseconds whose times
// are too small to be µs since the epoch), so they cannot be placed on the
// telemetry's clock.
var ErrRelativeTimes = errors.New("trace times are relative to the profiler's start (no baseTimeNanoseconds): they cannot be placed on the telemetry's clock")

// SyntaxError is a trace that is not well-formed JSON; Offset is the byte
// offset where reading stopped.
type SyntaxError struct {
	Offset int64
	Err    error
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("malformed JSON at byte %d: %v", e.Offset, e.Err)
}
func (e *SyntaxError) Unwrap() error { return e.Err }
