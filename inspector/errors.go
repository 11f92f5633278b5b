package inspector

import (
	"errors"
	"fmt"

	"github.com/collectiveattr/collectiveattr/internal/jsonscan"
)

// SyntaxError reports a line that is not well-formed JSON (a torn last line
// of a file being written, or not an Inspector file at all).
type SyntaxError = jsonscan.SyntaxError

// FieldError reports a well-formed record whose field is missing, of the
// wrong type or out of range. Field is the key's path, e.g. "header.rank".
type FieldError = jsonscan.FieldError

// VersionError reports a record whose inspector_output_format_version is
// not of format 4: its fields may mean something else.
type VersionError struct {
	Version string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("unsupported inspector_output_format_version %q (supported: v4.x)", e.Version)
}

// ErrNotOpRecord is returned for a JSON object that holds neither coll_perf
// nor p2p_perf: a line of another kind (some forks write statistics lines
// into the same file) or another program's JSON. Callers count and skip it.
var ErrNotOpRecord = errors.New("not an NCCL Inspector op record: no coll_perf or p2p_perf")

// ErrPendingFull: a record waiting for its rank's telemetry was given up
// to make room for a newer one.
var ErrPendingFull = errors.New("too many records waiting to be joined")

func missing(path string) error { return &FieldError{Field: path, Msg: "is missing"} }
