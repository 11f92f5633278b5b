// The readers as of commit 8c9c5f4, before the streaming decoder: the
// oracle the differential tests compare Stream, ReadAuto and DecodeJSONL with.

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

// oracleReadJSONL reads TelemetryEvent records, one JSON object per line (the
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
func oracleReadJSONL(r io.Reader) ([]Event, error) {
	return oldReadJSONL(r, nil)
}

// oracleDecodeJSONL is oracleReadJSONL over an in-memory buffer.
func oracleDecodeJSONL(data []byte) ([]Event, error) {
	var jr oldJsonlReader
	if err := jr.oldDecodeChunk(data, true); err != nil {
		return nil, err
	}
	return jr.out[:len(jr.out):len(jr.out)], nil
}

const (
	// oldChunkBytes is the streaming read size.
	oldChunkBytes = 8 << 20
	// oldMinParallelBytes is the chunk size below which splitting across
	// goroutines costs more than it saves.
	oldMinParallelBytes = 1 << 20
)

// oldReadJSONL streams r; head holds bytes already read from r.
func oldReadJSONL(r io.Reader, head []byte) ([]Event, error) {
	var sizeHint int64
	if st, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
			sizeHint = fi.Size()
		}
	}
	var jr oldJsonlReader
	buf := make([]byte, max(oldChunkBytes, 2*len(head)))
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
			if err := jr.oldDecodeChunk(buf[:n], true); err != nil {
				return nil, err
			}
			return jr.out[:len(jr.out):len(jr.out)], nil
		}
		cut := bytes.LastIndexByte(buf[:n], '\n') + 1
		if cut == 0 { // one line longer than the buffer
			buf = append(buf, make([]byte, len(buf))...)
			continue
		}
		if err := jr.oldDecodeChunk(buf[:cut], false); err != nil {
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

// oldJsonlReader decodes successive chunks of complete lines into out.
type oldJsonlReader struct {
	decoders []Decoder // one per worker, kept across chunks for interning
	out      []Event
	filled   []bool
	line     int // lines before the current chunk
}

// oldDecodeChunk decodes the lines of data (which ends at a line boundary
// unless final) and appends the events.
func (jr *oldJsonlReader) oldDecodeChunk(data []byte, final bool) error {
	lines := bytes.Count(data, []byte{'\n'})
	if final && len(data) > 0 && data[len(data)-1] != '\n' {
		lines++
	}
	workers := runtime.GOMAXPROCS(0)
	if len(data) < oldMinParallelBytes || workers < 2 {
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
			p.err = d.oldDecodeLines(data, p.start, p.end, p.firstLine, lines, final, jr.line, out, filled)
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

// oldDecodeLines decodes data[start:end] whose first line has index line within
// the chunk; lineBase is the number of lines before the chunk.
func (d *Decoder) oldDecodeLines(data []byte, start, end, line, chunkLines int, final bool, lineBase int, out []Event, filled []bool) *RecordError {
	for pos := start; pos < end; line++ {
		next := end
		lineEnd := end
		if i := bytes.IndexByte(data[pos:end], '\n'); i >= 0 {
			lineEnd = pos + i
			next = lineEnd + 1
		}
		text := data[pos:lineEnd]
		pos = next
		if oldIsBlankLine(text) {
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

func oldIsBlankLine(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\v', '\f':
		default:
			return false
		}
	}
	return true
}

// oracleReadDocument reads a JSON document holding TelemetryEvent records: an array
// of records, an object with an "events" array, or a single record object
// (the reference's JSON loader). A bad record fails the read with a
// *RecordError naming its index and the line it starts on; malformed JSON
// names the line of the error.
func oracleReadDocument(data []byte) ([]Event, error) {
	// The whole text must be valid JSON first, as for json.load.
	s := &scanner{data: data}
	err := s.skipValue()
	if err == nil {
		err = s.expectEnd()
	}
	var syn *SyntaxError
	if errors.As(err, &syn) {
		return nil, &RecordError{Line: oldLineAt(data, syn.Offset), Index: -1, Err: fmt.Errorf("malformed JSON: %s", syn.Msg)}
	}
	spans, err := oldDocumentRecords(data)
	if err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(spans))
	var d Decoder
	for i, sp := range spans {
		rec := data[sp[0]:sp[1]]
		if rec[0] != '{' {
			return nil, &RecordError{Line: oldLineAt(data, sp[0]), Index: i, Err: errors.New("must be an object")}
		}
		ev, err := d.Decode(rec)
		if err != nil {
			return nil, &RecordError{Line: oldLineAt(data, sp[0]), Index: i, Err: err}
		}
		out = append(out, ev)
	}
	return out, nil
}

func oldLineAt(data []byte, off int) int {
	return 1 + bytes.Count(data[:min(off, len(data))], []byte{'\n'})
}

// oldDocumentRecords returns the byte spans of the records of a valid JSON
// document: the elements of a top-level array, of the (last) "events" array
// of a top-level object, or the object itself when it looks like a record.
func oldDocumentRecords(data []byte) ([][2]int, error) {
	s := &scanner{data: data}
	switch s.peek() {
	case '[':
		return oldArrayElements(s), nil
	case '{':
	default:
		return nil, errors.New("Telemetry payload must be a JSON object or array")
	}
	start := s.pos
	var spans [][2]int
	hasEvents, looksLike := false, false
	oldMembers(s, func(key string) {
		if key == "events" && s.peek() == '[' {
			spans, hasEvents = oldArrayElements(s), true
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

// oldMembers walks the oldMembers of the (valid) object at s.pos, calling member
// with each key and s at its value, which member must move past; s ends
// past the object.
func oldMembers(s *scanner, member func(key string)) {
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

// oldEventsIsArray reports whether the (valid) object text holds an "events"
// array, the last "events" key deciding as in json.loads.
func oldEventsIsArray(object []byte) bool {
	s := &scanner{data: object}
	isArray := false
	oldMembers(s, func(key string) {
		if key == "events" {
			isArray = s.peek() == '['
		}
		_ = s.skipValue()
	})
	return isArray
}

// oldArrayElements returns the spans of the elements of the (valid) array at
// s.pos and moves past it.
func oldArrayElements(s *scanner) [][2]int {
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

// oracleReadAuto reads either JSON Lines or one JSON document, deciding by content:
// input whose first non-blank byte is '[' is a document; so is one object with
// an "events" array, or one object spread over several lines (a pretty-printed
// record); anything else is streamed as JSON Lines.
func oracleReadAuto(r io.Reader) ([]Event, error) {
	head, err := oldReadHead(r)
	if err != nil {
		return nil, err
	}
	s := &scanner{data: head}
	switch s.peek() {
	case '[':
		return oldReadDocument(r, head, false)
	case '{':
		switch oldFirstLineKind(head[s.pos:]) {
		case oldEventsWrapper:
			return oldReadDocument(r, head, false)
		case oldIncompleteLine:
			return oldReadDocument(r, head, true)
		}
	}
	return oldReadJSONL(r, head)
}

// oldReadHead reads the start of r that tells its format: 64 KiB, or more
// until the first non-blank byte and, when that opens an object, the end of
// its line. json.dump writes a whole {"events": [...]} document on one line,
// and from its first 64 KiB alone it would pass for a record line.
func oldReadHead(r io.Reader) ([]byte, error) {
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

// oldReadDocument reads the rest of r and decodes one document. When the
// document shape was only a guess (an incomplete first line) and the text is
// not valid JSON, it is decoded as JSON Lines instead, so the error names
// the bad line.
func oldReadDocument(r io.Reader, head []byte, guessed bool) ([]Event, error) {
	rest, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	data := append(head, rest...)
	if guessed {
		s := &scanner{data: data}
		if s.skipValue() != nil || s.expectEnd() != nil {
			return oracleDecodeJSONL(data)
		}
	}
	return oracleReadDocument(data)
}

type oldLineKind int

const (
	oldRecordLine     oldLineKind = iota // a complete value: JSON Lines
	oldEventsWrapper                     // {"events": [...]} on one line
	oldIncompleteLine                    // the value continues past the first line
)

// oldFirstLineKind classifies the first line of text (which starts at '{').
// It builds nothing: that line may be a whole document.
func oldFirstLineKind(text []byte) oldLineKind {
	first := text
	i := bytes.IndexByte(text, '\n')
	if i >= 0 {
		first = text[:i]
	}
	s := &scanner{data: first}
	if s.skipValue() == nil && s.expectEnd() == nil {
		if oldEventsIsArray(first) {
			return oldEventsWrapper
		}
		return oldRecordLine
	}
	if i < 0 {
		return oldRecordLine // a lone unterminated line: JSON Lines' truncated tail
	}
	return oldIncompleteLine
}
