package telemetry

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
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

// ReadDocument reads a JSON document holding TelemetryEvent records: an array
// of records, an object with an "events" array, or a single record object
// (the reference's JSON loader). A bad record fails the read with a
// *RecordError naming its index and the line it starts on; malformed JSON
// names the line of the error.
func ReadDocument(data []byte) ([]Event, error) {
	return readDocument(data, false)
}

// readDocument is ReadDocument; lazy keeps metadata as text, as Stream does.
func readDocument(data []byte, lazy bool) ([]Event, error) {
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
	d := Decoder{lazy: lazy}
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

// readHead reads the start of r that tells its format: 64 KiB, or more
// until the first non-blank byte and, when that opens an object, the end of
// its line. json.dump writes a whole {"events": [...]} document on one line,
// and from its first 64 KiB alone it would pass for a record line.
func (in *input) readHead() ([]byte, error) {
	head := make([]byte, 64<<10)
	n := 0
	for {
		m, err := io.ReadFull(in.r, head[n:])
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
		// Double while the line may still be a long record; past
		// longFirstLine it is most likely a one-line document, read whole.
		head = in.grow(head[:n], len(head) >= longFirstLine)
		head = head[:cap(head)]
	}
}

// readRest appends the rest of the input to data.
func (in *input) readRest(data []byte) ([]byte, error) {
	for {
		if len(data) == cap(data) {
			data = in.grow(data, true)
		}
		m, err := in.r.Read(data[len(data):cap(data)])
		data = data[:len(data)+m]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// input is a reader and the large buffers read from it, which release
// frees.
type input struct {
	r        io.Reader
	releases []func()
}

func (in *input) release() {
	for _, f := range in.releases {
		f()
	}
	in.releases = nil
}

// grow makes room in data: with all, for the rest of the input at once when
// its size is known (a document is read whole, and growing it by doubling
// would copy it and hold up to twice its size); else for as much again.
func (in *input) grow(data []byte, all bool) []byte {
	more := max(len(data), 64<<10)
	if rest, ok := in.remaining(); all && ok {
		more = rest + 1 // +1: reach EOF without growing again
	}
	grown, release := textBuffer(len(data) + more)
	if release != nil {
		in.releases = append(in.releases, release)
	}
	grown = grown[:len(data)]
	copy(grown, data)
	return grown
}

// remaining is the number of bytes left in a bytes.Reader, strings.Reader
// or regular file.
func (in *input) remaining() (int, bool) {
	if rd, ok := in.r.(interface{ Len() int }); ok {
		return rd.Len(), true
	}
	if f, ok := in.r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if off, err := f.Seek(0, io.SeekCurrent); err == nil && fi.Size() >= off {
				return int(fi.Size() - off), true
			}
		}
	}
	return 0, false
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
