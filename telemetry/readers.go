package telemetry

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
)

// RecordError is a bad record: Line is the 1-based line it starts on (0 when
// unknown), Index its 0-based position in a JSON document (-1 for JSON
// Lines).
type RecordError struct {
	Line  int
	Index int
	Err   error
}

func (e *RecordError) Error() string {
	switch {
	case e.Line > 0 && e.Index >= 0:
		return fmt.Sprintf("line %d (event at index %d): %s", e.Line, e.Index, e.Err)
	case e.Line > 0:
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
//
// The input is streamed in chunks (decoded in parallel), so memory holds the
// events plus one chunk, not the whole text. Events share one Metadata map
// per distinct metadata text: treat Metadata as read-only.
func ReadJSONL(r io.Reader) ([]Event, error) {
	return readJSONL(r, nil)
}

// DecodeJSONL is ReadJSONL over an in-memory buffer.
func DecodeJSONL(data []byte) ([]Event, error) {
	var jr jsonlReader
	if err := jr.decodeChunk(data, true); err != nil {
		return nil, err
	}
	return jr.out[:len(jr.out):len(jr.out)], nil
}

const (
	// chunkBytes is the streaming read size.
	chunkBytes = 8 << 20
	// minParallelBytes is the chunk size below which splitting across
	// goroutines costs more than it saves.
	minParallelBytes = 1 << 20
)

// readJSONL streams r; head holds bytes already read from r.
func readJSONL(r io.Reader, head []byte) ([]Event, error) {
	var sizeHint int64
	if st, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
			sizeHint = fi.Size()
		}
	}
	var jr jsonlReader
	buf := make([]byte, max(chunkBytes, 2*len(head)))
	n := copy(buf, head)
	consumed := int64(0)
	for {
		m, err := io.ReadFull(r, buf[n:])
		n += m
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return nil, err
		}
		if eof {
			if err := jr.decodeChunk(buf[:n], true); err != nil {
				return nil, err
			}
			return jr.out[:len(jr.out):len(jr.out)], nil
		}
		cut := bytes.LastIndexByte(buf[:n], '\n') + 1
		if cut == 0 { // one line longer than the buffer
			buf = append(buf, make([]byte, len(buf))...)
			continue
		}
		if err := jr.decodeChunk(buf[:cut], false); err != nil {
			return nil, err
		}
		consumed += int64(cut)
		if sizeHint > 0 && consumed == int64(cut) && len(jr.out) > 0 {
			// Size the result once from the first chunk's bytes per event,
			// instead of growing (and copying) it repeatedly.
			want := int(float64(sizeHint)/float64(cut)*float64(len(jr.out))*1.02) + 16
			jr.out = slices.Grow(jr.out, want-len(jr.out))
		}
		n = copy(buf, buf[cut:n])
	}
}

// jsonlReader decodes successive chunks of complete lines into out.
type jsonlReader struct {
	decoders []Decoder // one per worker, kept across chunks for interning
	out      []Event
	filled   []bool
	line     int // lines before the current chunk
}

// decodeChunk decodes the lines of data (which ends at a line boundary
// unless final) and appends the events.
func (jr *jsonlReader) decodeChunk(data []byte, final bool) error {
	lines := bytes.Count(data, []byte{'\n'})
	if final && len(data) > 0 && data[len(data)-1] != '\n' {
		lines++
	}
	workers := runtime.GOMAXPROCS(0)
	if len(data) < minParallelBytes || workers < 2 {
		workers = 1
	}
	for len(jr.decoders) < workers {
		jr.decoders = append(jr.decoders, Decoder{})
	}
	base := len(jr.out)
	jr.out = slices.Grow(jr.out, lines)[:base+lines]
	out := jr.out[base:]
	if cap(jr.filled) < lines {
		jr.filled = make([]bool, lines)
	}
	filled := jr.filled[:lines]
	clear(filled)

	type part struct {
		start, end, firstLine int
		err                   *RecordError
	}
	parts := make([]part, 0, workers)
	start, line := 0, 0
	for w := 1; w <= workers; w++ {
		end := len(data)
		if w < workers {
			end = max(start, len(data)*w/workers)
			if i := bytes.IndexByte(data[end:], '\n'); i >= 0 {
				end += i + 1
			} else {
				end = len(data)
			}
		}
		parts = append(parts, part{start: start, end: end, firstLine: line})
		line += bytes.Count(data[start:end], []byte{'\n'})
		start = end
	}
	var wg sync.WaitGroup
	for i := range parts {
		p := &parts[i]
		d := &jr.decoders[i]
		wg.Go(func() {
			p.err = d.decodeLines(data, p.start, p.end, p.firstLine, lines, final, jr.line, out, filled)
		})
	}
	wg.Wait()
	for _, p := range parts {
		if p.err != nil {
			return p.err
		}
	}
	// Compact away blank and dropped lines.
	n := 0
	for i := range out {
		if filled[i] {
			out[n] = out[i]
			n++
		}
	}
	clear(out[n:])
	jr.out = jr.out[:base+n]
	jr.line += lines
	return nil
}

// decodeLines decodes data[start:end] whose first line has index line within
// the chunk; lineBase is the number of lines before the chunk.
func (d *Decoder) decodeLines(data []byte, start, end, line, chunkLines int, final bool, lineBase int, out []Event, filled []bool) *RecordError {
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
		if err := d.decodeInto(text, &out[line]); err != nil {
			var syn *SyntaxError
			truncatedTail := final && line == chunkLines-1 && lineEnd == len(data)
			if errors.As(err, &syn) && truncatedTail {
				continue
			}
			if errors.As(err, &syn) {
				err = fmt.Errorf("malformed JSON record: %s", syn.Msg)
			}
			return &RecordError{Line: lineBase + line + 1, Index: -1, Err: err}
		}
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
// *RecordError naming its index and the line it starts on; malformed JSON
// names the line of the error.
func ReadDocument(data []byte) ([]Event, error) {
	// The whole text must be valid JSON first, as for json.load.
	s := &scanner{data: data}
	err := s.skipValue()
	if err == nil {
		err = s.expectEnd()
	}
	var syn *SyntaxError
	if errors.As(err, &syn) {
		return nil, &RecordError{Line: lineAt(data, syn.Offset), Index: -1, Err: fmt.Errorf("malformed JSON: %s", syn.Msg)}
	}
	spans, err := documentRecords(data)
	if err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(spans))
	var d Decoder
	for i, sp := range spans {
		rec := data[sp[0]:sp[1]]
		if rec[0] != '{' {
			return nil, &RecordError{Line: lineAt(data, sp[0]), Index: i, Err: errors.New("must be an object")}
		}
		ev, err := d.Decode(rec)
		if err != nil {
			return nil, &RecordError{Line: lineAt(data, sp[0]), Index: i, Err: err}
		}
		out = append(out, ev)
	}
	return out, nil
}

func lineAt(data []byte, off int) int {
	return 1 + bytes.Count(data[:min(off, len(data))], []byte{'\n'})
}

// documentRecords returns the byte spans of the records of a valid JSON
// document: the elements of a top-level array, of the (last) "events" array
// of a top-level object, or the object itself when it looks like a record.
func documentRecords(data []byte) ([][2]int, error) {
	s := &scanner{data: data}
	switch s.peek() {
	case '[':
		return arrayElements(s), nil
	case '{':
	default:
		return nil, errors.New("Telemetry payload must be a JSON object or array")
	}
	start := s.pos
	var spans [][2]int
	hasEvents, looksLike := false, false
	members(s, func(key string) {
		if key == "events" && s.peek() == '[' {
			spans, hasEvents = arrayElements(s), true
		} else {
			if key == "events" {
				hasEvents = false
			}
			_ = s.skipValue()
		}
		switch key {
		case "schema_version", "event_type", "type", "memory_allocated", "memory_mb", "timestamp", "timestamp_ns":
			looksLike = true
		}
	})
	switch {
	case hasEvents:
		return spans, nil
	case looksLike:
		return [][2]int{{start, s.pos}}, nil
	}
	return nil, errors.New("JSON payload does not contain telemetry events")
}

// members walks the members of the (valid) object at s.pos, calling member
// with each key and s at its value, which member must move past; s ends
// past the object.
func members(s *scanner, member func(key string)) {
	s.peek()
	s.pos++ // '{'
	for s.peek() != '}' {
		kb, _ := s.stringBytes()
		s.peek()
		s.pos++ // ':'
		member(string(kb))
		if s.peek() == ',' {
			s.pos++
		}
	}
	s.pos++
}

// eventsIsArray reports whether the (valid) object text holds an "events"
// array, the last "events" key deciding as in json.loads.
func eventsIsArray(object []byte) bool {
	s := &scanner{data: object}
	isArray := false
	members(s, func(key string) {
		if key == "events" {
			isArray = s.peek() == '['
		}
		_ = s.skipValue()
	})
	return isArray
}

// arrayElements returns the spans of the elements of the (valid) array at
// s.pos and moves past it.
func arrayElements(s *scanner) [][2]int {
	var spans [][2]int
	s.pos++ // '['
	for s.peek() != ']' {
		start := s.pos
		_ = s.skipValue()
		spans = append(spans, [2]int{start, s.pos})
		if s.peek() == ',' {
			s.pos++
		}
	}
	s.pos++
	return spans
}

// ReadAuto reads either JSON Lines or one JSON document, deciding by content:
// input whose first non-blank byte is '[' is a document; so is one object with
// an "events" array, or one object spread over several lines (a pretty-printed
// record); anything else is streamed as JSON Lines.
func ReadAuto(r io.Reader) ([]Event, error) {
	head, err := readHead(r)
	if err != nil {
		return nil, err
	}
	s := &scanner{data: head}
	switch s.peek() {
	case '[':
		return readDocument(r, head, false)
	case '{':
		switch firstLineKind(head[s.pos:]) {
		case eventsWrapper:
			return readDocument(r, head, false)
		case incompleteLine:
			return readDocument(r, head, true)
		}
	}
	return readJSONL(r, head)
}

// readHead reads the start of r that tells its format: 64 KiB, or more
// until the first non-blank byte and, when that opens an object, the end of
// its line. json.dump writes a whole {"events": [...]} document on one line,
// and from its first 64 KiB alone it would pass for a record line.
func readHead(r io.Reader) ([]byte, error) {
	head := make([]byte, 64<<10)
	n := 0
	for {
		m, err := io.ReadFull(r, head[n:])
		n += m
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return head[:n], nil
		}
		if err != nil {
			return nil, err
		}
		s := &scanner{data: head[:n]}
		if c := s.peek(); c != 0 && (c != '{' || bytes.IndexByte(head[s.pos:n], '\n') >= 0) {
			return head[:n], nil
		}
		head = append(head, make([]byte, len(head))...)
	}
}

// readDocument reads the rest of r and decodes one document. When the
// document shape was only a guess (an incomplete first line) and the text is
// not valid JSON, it is decoded as JSON Lines instead, so the error names
// the bad line.
func readDocument(r io.Reader, head []byte, guessed bool) ([]Event, error) {
	rest, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	data := append(head, rest...)
	if guessed {
		s := &scanner{data: data}
		if s.skipValue() != nil || s.expectEnd() != nil {
			return DecodeJSONL(data)
		}
	}
	return ReadDocument(data)
}

type lineKind int

const (
	recordLine     lineKind = iota // a complete value: JSON Lines
	eventsWrapper                  // {"events": [...]} on one line
	incompleteLine                 // the value continues past the first line
)

// firstLineKind classifies the first line of text (which starts at '{').
// It builds nothing: that line may be a whole document.
func firstLineKind(text []byte) lineKind {
	first := text
	i := bytes.IndexByte(text, '\n')
	if i >= 0 {
		first = text[:i]
	}
	s := &scanner{data: first}
	if s.skipValue() == nil && s.expectEnd() == nil {
		if eventsIsArray(first) {
			return eventsWrapper
		}
		return recordLine
	}
	if i < 0 {
		return recordLine // a lone unterminated line: JSON Lines' truncated tail
	}
	return incompleteLine
}
