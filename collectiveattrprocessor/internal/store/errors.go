package store

import (
	"errors"
	"fmt"
	"iter"

	"github.com/collectiveattr/collectiveattr/window"
)

// ErrStale is the error of an entry older than its job's window: its time
// is before the job's newest event time minus the window.
var ErrStale = errors.New("event time is older than the job's newest event minus window")

// ErrDuplicate is the error of an item identical to one its rank buffers:
// a retried or replayed batch.
var ErrDuplicate = errors.New("identical to an item already buffered for this rank (a retry or replay); the first one is kept")

// ErrRankConflict is the error of records of a rank that another host
// sends at the same time (window.Rank.Claim); a RankConflictError names
// them.
var ErrRankConflict = errors.New("the rank's records come from two hosts at once; the second host's are not buffered")

// RankConflictError is ErrRankConflict for one rank: the host whose records
// the rank holds, and the host refused.
type RankConflictError struct {
	Job             string
	Rank            int64
	Holder, Refused string
}

func (e *RankConflictError) Error() string {
	return fmt.Sprintf("rank %d of job %q: records from host %q while host %q sends this rank; neither series is merged into the other (two processes claim one rank: a launch error or two jobs with one id)",
		e.Rank, e.Job, e.Refused, e.Holder)
}

func (e *RankConflictError) Unwrap() error { return ErrRankConflict }

// LimitError is the error of data refused because a count limit is
// reached; Limit is the configuration key.
type LimitError struct {
	Limit string
	what  string
}

func (e *LimitError) Error() string {
	return e.Limit + " reached: data of a new " + e.what + " is not buffered"
}

// The count limits a record can hit, as errors.
var (
	ErrJobLimit  = &LimitError{Limit: "limits.max_jobs", what: "job"}
	ErrRankLimit = &LimitError{Limit: "limits.max_ranks_per_job", what: "rank"}
)

// rejection indexes the errors a Tally counts.
type rejection uint8

const (
	rejectStale rejection = iota
	rejectJobLimit
	rejectRankLimit
	rejectDuplicate
	rejectConflict
	numRejections
)

var rejectionErrs = [numRejections]error{ErrStale, ErrJobLimit, ErrRankLimit, ErrDuplicate, ErrRankConflict}

// Bound is a buffer bound that evicts entries (the window's).
type Bound = window.Bound

// The bounds.
const (
	// BoundWindow evicts entries that fell out of the window.
	BoundWindow = window.BoundWindow
	// BoundMaxEventsPerRank evicts a full rank's oldest entry.
	BoundMaxEventsPerRank = window.BoundMaxEventsPerRank
	NumBounds             = window.NumBounds
)

// Tally counts what the store did since it was last taken (Store.Take):
// records buffered, records (or marker times) refused, by error, and
// entries evicted, by bound.
type Tally struct {
	Buffered int64
	rejected [numRejections]int64
	Evicted  [NumBounds]int64
	// conflict is the last rank conflict refused, for the log.
	conflict *RankConflictError
}

// Rejections yields each error that refused data, with how many items it
// refused.
func (t *Tally) Rejections() iter.Seq2[error, int64] {
	return func(yield func(error, int64) bool) {
		for i, n := range t.rejected {
			err := rejectionErrs[i]
			if rejection(i) == rejectConflict && t.conflict != nil {
				err = t.conflict
			}
			if n > 0 && !yield(err, n) {
				return
			}
		}
	}
}

// Rejected is how many items err refused.
func (t *Tally) Rejected(err error) int64 {
	for i, e := range rejectionErrs {
		if e == err {
			return t.rejected[i]
		}
	}
	return 0
}
