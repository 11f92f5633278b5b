package telemetry

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// RecordError is a bad record in a stream: Line is 1-based for JSON Lines,
// Index is 0-based for JSON documents (-1 when not applicable).
type RecordError struct {
	Line  int
	Index int
	Err   error
}

func (e *RecordError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Err)
	}
	return fmt.Sprintf("event at index %d: %s", e.Index, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// ReadJSONL reads TelemetryEvent records, one JSON object per line (the
// reference's JSONL loader): blank lines are skipped; an unparsable last line
// without a trailing newline is a truncated tail (a writer still appending)
// and is dropped; any other bad line fails the whole read with a
// *RecordError naming the line, e.g. "line 7: rank must be < world_size".
//
// Lines are split on "\n" only ("\r\n" works: "\r" is JSON whitespace);
// Python's splitlines would also split inside a raw U+2028 in a string.
func ReadJSONL(r io.Reader) ([]Event, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return DecodeJSONL(data)
}

// minParallelBytes is the input size below which splitting across goroutines
// costs more than it saves.
const minParallelBytes = 1 << 20

// DecodeJSONL is ReadJSONL over an in-memory buffer. Large inputs are decoded
// in parallel chunks split at line boundaries; the result and the reported
// error are the same as a sequential read (the first bad line wins).
func DecodeJSONL(data []byte) ([]Event, error) {
	lines := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		lines++
	}
	events := make([]Event, lines)
	filled := make([]bool, lines)

	workers := runtime.GOMAXPROCS(0)
	if len(data) < minParallelBytes || workers < 2 {
		workers = 1
	}
	// Chunk boundaries at line starts; each chunk knows its first line index.
	type chunk struct {
		start, end, firstLine int
		err                   *RecordError
	}
	chunks := make([]chunk, 0, workers)
	start, line := 0, 0
	for w := 1; w <= workers; w++ {
		end := len(data)
		if w < workers {
			end = len(data) * w / workers
			if end < start {
				end = start
			}
			if i := bytes.IndexByte(data[end:], '\n'); i >= 0 {
				end += i + 1
			} else {
				end = len(data)
			}
		}
		chunks = append(chunks, chunk{start: start, end: end, firstLine: line})
		line += bytes.Count(data[start:end], []byte{'\n'})
		start = end
	}

	var wg sync.WaitGroup
	for i := range chunks {
		c := &chunks[i]
		wg.Go(func() {
			c.err = decodeLines(data, c.start, c.end, c.firstLine, lines, events, filled)
		})
	}
	wg.Wait()
	for _, c := range chunks {
		if c.err != nil {
			return nil, c.err
		}
	}
	// Compact away blank and dropped lines.
	n := 0
	for i := range events {
		if filled[i] {
			events[n] = events[i]
			n++
		}
	}
	clear(events[n:])
	return events[:n:n], nil
}

func decodeLines(data []byte, start, end, line, totalLines int, out []Event, filled []bool) *RecordError {
	var d Decoder
	for pos := start; pos < end; line++ {
		next := end
		lineEnd := end
		if i := bytes.IndexByte(data[pos:end], '\n'); i >= 0 {
			lineEnd = pos + i
			next = lineEnd + 1
		}
		text := data[pos:lineEnd]
		pos = next
		if isBlankLine(text) {
			continue
		}
		ev, err := d.Decode(text)
		if err != nil {
			var syn *SyntaxError
			truncatedTail := line == totalLines-1 && lineEnd == len(data)
			if errors.As(err, &syn) && truncatedTail {
				continue
			}
			if errors.As(err, &syn) {
				err = fmt.Errorf("malformed JSON record: %s", syn.Msg)
			}
			return &RecordError{Line: line + 1, Index: -1, Err: err}
		}
		out[line] = ev
		filled[line] = true
	}
	return nil
}

func isBlankLine(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\v', '\f':
		default:
			return false
		}
	}
	return true
}

// ReadDocument reads a JSON document holding TelemetryEvent records: an array
// of records, an object with an "events" array, or a single record object
// (the reference's JSON loader). A bad record fails the read with a
// *RecordError naming its index.
func ReadDocument(data []byte) ([]Event, error) {
	s := &scanner{data: data}
	v, err := s.value()
	if err == nil {
		err = s.expectEnd()
	}
	if err != nil {
		return nil, err
	}
	var records []any
	switch x := v.(type) {
	case []any:
		records = x
	case map[string]any:
		if evs, ok := x["events"].([]any); ok {
			records = evs
		} else if looksLikeRecord(x) {
			records = []any{x}
		} else {
			return nil, errors.New("JSON payload does not contain telemetry events")
		}
	default:
		return nil, errors.New("Telemetry payload must be a JSON object or array")
	}
	// Records are re-encoded one by one and decoded with the strict decoder
	// so both readers apply identical rules; documents are small enough for
	// this to be cheap compared with JSON Lines streams.
	out := make([]Event, 0, len(records))
	var d Decoder
	var buf []byte
	for i, r := range records {
		if _, ok := r.(map[string]any); !ok {
			return nil, &RecordError{Index: i, Err: errors.New("must be an object")}
		}
		buf = appendJSONValue(buf[:0], r)
		ev, err := d.Decode(buf)
		if err != nil {
			return nil, &RecordError{Index: i, Err: err}
		}
		out = append(out, ev)
	}
	return out, nil
}

func looksLikeRecord(m map[string]any) bool {
	for _, k := range []string{"schema_version", "event_type", "type", "memory_allocated", "memory_mb", "timestamp", "timestamp_ns"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// ReadAuto reads either JSON Lines or one JSON document, deciding by content:
// input whose first non-blank byte is '[' is a document; so is input that is
// exactly one JSON object with an "events" array, or one object spread over
// several lines; anything else is JSON Lines.
func ReadAuto(data []byte) ([]Event, error) {
	s := &scanner{data: data}
	switch s.peek() {
	case '[':
		return ReadDocument(data)
	case '{':
		if isSingleDocument(data) {
			return ReadDocument(data)
		}
	}
	return DecodeJSONL(data)
}

// isSingleDocument reports whether data is one JSON object that is not a
// one-line record: an {"events": [...]} wrapper, or a pretty-printed object.
func isSingleDocument(data []byte) bool {
	s := &scanner{data: data}
	s.skipWS()
	first := s.pos
	if err := s.skipValue(); err != nil {
		return false
	}
	if s.expectEnd() != nil {
		return false
	}
	if bytes.IndexByte(bytes.TrimSpace(data[first:s.pos]), '\n') >= 0 {
		return true
	}
	s2 := &scanner{data: data}
	v, err := s2.value()
	if err != nil {
		return false
	}
	m, _ := v.(map[string]any)
	_, hasEvents := m["events"].([]any)
	return hasEvents
}
