package inspector

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// maxLine bounds one record: a verbose record lists one kernel event per
// channel, a few kB even with 64 channels.
const maxLine = 4 << 20

// Stats counts what a Reader read.
type Stats struct {
	// Ops is the number of op records parsed, Collectives + P2P.
	Ops         int
	Collectives int
	P2P         int
	// Per flag, the ops that carry it.
	ApproximateTime int
	InvalidOp       int
	WrappedSize     int
	NaNBandwidth    int
	// NotOpRecords counts well-formed lines that are no op record;
	// Malformed the lines that failed to parse (ErrNotOpRecord aside).
	NotOpRecords int
	Malformed    int
	// IncompleteDumps counts dumps (format v4.3 and later) whose announced
	// op lines did not all come: their context ends where they broke off.
	IncompleteDumps int
}

// Add counts one parsed op.
func (s *Stats) Add(op *Op) {
	s.Ops++
	if op.Kind == P2P {
		s.P2P++
	} else {
		s.Collectives++
	}
	if op.Flags&FlagApproximateTime != 0 {
		s.ApproximateTime++
	}
	if op.Flags&FlagInvalidOp != 0 {
		s.InvalidOp++
	}
	if op.Flags&FlagWrappedSize != 0 {
		s.WrappedSize++
	}
	if op.Flags&FlagNaNBandwidth != 0 {
		s.NaNBandwidth++
	}
}

// LineError is a line that failed to parse.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Reader reads Inspector files. A line that does not parse is counted and
// skipped, never fatal: the plugin's output is a lossy sample, and the last
// line of a file being written may be torn.
type Reader struct {
	Parser Parser
	Stats  Stats
	// FirstError is the first line that failed to parse (nil if none).
	FirstError *LineError
}

// Read parses every non-blank line of r, one file, and calls visit with
// each op; the *Op is reused after visit returns. It returns only read
// errors.
func (rd *Reader) Read(r io.Reader, visit func(*Op)) error {
	rd.Parser.ResetContext()
	startIncomplete := rd.Parser.IncompleteDumps()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		op, err := rd.Parser.Parse(b)
		switch {
		case err == nil:
			rd.Stats.Add(&op)
			visit(&op)
		case err == ErrNotOpRecord:
			rd.Stats.NotOpRecords++
		default:
			rd.Stats.Malformed++
			if rd.FirstError == nil {
				rd.FirstError = &LineError{Line: line, Err: err}
			}
		}
	}
	rd.Parser.endDump() // the file's last dump ends with it
	rd.Stats.IncompleteDumps += rd.Parser.IncompleteDumps() - startIncomplete
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", line+1, err)
	}
	return nil
}
