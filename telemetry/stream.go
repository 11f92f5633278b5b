package telemetry

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// Stream reads TelemetryEvent records from r, JSON Lines or one JSON
// document (told apart as ReadAuto does), and calls fn with consecutive
// chunks of them in input order, from the calling goroutine. Records are
// decoded in parallel, GOMAXPROCS workers ahead of fn; memory holds a few
// chunks of text and events (and a whole JSON document, which is read into
// memory), not every event.
//
// The events' Metadata maps are not built: each event keeps its metadata's
// JSON text, which the Event.Metadata* methods read (a consumer asks for
// the keys it needs). The chunk is reused once fn returns: copy the Events
// a consumer keeps (an Event's strings and metadata text stay valid).
//
// Stream returns the error of the first bad record in input order, the same
// *RecordError with the same line (and index) ReadAuto reports, or the first
// error fn returns, or the read error. fn may have been called with the
// records before the bad one: on an error, discard what it was given.
func Stream(r io.Reader, fn func(chunk []Event) error) error {
	return stream(r, readOptions{lazy: true}, fn)
}

// DroppedTail is the last line of JSON Lines input when it has no newline
// and is not valid JSON: a writer still appending. The readers drop it, as
// the reference does; a caller may want to say so.
type DroppedTail struct {
	Line  int // 1-based
	Bytes int
}

// StreamNotingTail is Stream that also calls dropped when the input's
// truncated last line was dropped (JSON Lines only: a truncated document
// is an error).
func StreamNotingTail(r io.Reader, fn func(chunk []Event) error, dropped func(DroppedTail)) error {
	return stream(r, readOptions{lazy: true, dropped: dropped}, fn)
}

// readOptions: lazy keeps metadata as text (Stream), else the events'
// Metadata maps are built (the readers that return every event); dropped,
// when set, hears of a dropped truncated tail.
type readOptions struct {
	lazy    bool
	dropped func(DroppedTail)
}

// stream is Stream with its options.
func stream(r io.Reader, opts readOptions, fn func(chunk []Event) error) error {
	in := &input{r: r}
	// Events do not refer to the text they are decoded from.
	defer in.release()
	head, err := in.readHead()
	if err != nil {
		return err
	}
	s := &scanner{data: head}
	switch s.peek() {
	case '[':
		return streamDocument(in, head, nil, opts, fn)
	case '{':
		first := head
		if i := bytes.IndexByte(head[s.pos:], '\n'); i >= 0 {
			first = head[:s.pos+i]
		}
		if len(first) > longFirstLine {
			// json.dump's one-line {"events": [...]}: classifying it as
			// firstLineKind does would check the whole document in one
			// sequential pass. The light split tells it; the document's
			// check and decoding confirm it, or go the exact way.
			if spans, events, ok := splitDocument(first); ok && events {
				return streamDocument(in, head, &split{end: len(first), spans: spans}, opts, fn)
			}
		}
		switch firstLineKind(head[s.pos:]) {
		case eventsWrapper, incompleteLine:
			return streamDocument(in, head, nil, opts, fn)
		}
	}
	return streamJSONL(r, head, opts, fn)
}

// longFirstLine is the first-line length from which a line opening an
// object is split lightly before it is classified.
const longFirstLine = 1 << 20

// ReadAuto reads either JSON Lines or one JSON document, deciding by content:
// input whose first non-blank byte is '[' is a document; so is one object with
// an "events" array, or one object spread over several lines (a pretty-printed
// record); anything else is streamed as JSON Lines. It is Stream collecting
// every event, with their Metadata maps built.
func ReadAuto(r io.Reader) ([]Event, error) {
	return collect(func(fn func([]Event) error) error { return stream(r, readOptions{}, fn) })
}

// ReadJSONL reads TelemetryEvent records, one JSON object per line (the
// reference's JSONL loader): blank lines are skipped; an unparsable last line
// without a trailing newline is a truncated tail (a writer still appending)
// and is dropped; any other bad line fails the whole read with a
// *RecordError naming the line, e.g. "line 7: rank must be < world_size".
//
// Lines are split on "\n" only ("\r\n" works: "\r" is JSON whitespace);
// Python's splitlines would also split inside a raw U+2028 in a string.
//
// Events share one Metadata map per distinct metadata text: treat Metadata
// as read-only.
func ReadJSONL(r io.Reader) ([]Event, error) {
	return collect(func(fn func([]Event) error) error { return streamJSONL(r, nil, readOptions{}, fn) })
}

// DecodeJSONL is ReadJSONL over an in-memory buffer.
func DecodeJSONL(data []byte) ([]Event, error) {
	return ReadJSONL(bytes.NewReader(data))
}

func collect(stream func(fn func([]Event) error) error) ([]Event, error) {
	out := []Event{}
	err := stream(func(chunk []Event) error {
		out = append(out, chunk...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out[:len(out):len(out)], nil
}

const (
	// blockBytes is the size of one JSON Lines block, the unit of parallel
	// work: large enough to amortise the hand-offs (a few microseconds a
	// block), small enough that the blocks in flight and their events stay
	// in a few MiB of memory, which is touched for the first time (page
	// faults, in the kernel) as often as it is large.
	blockBytes = 256 << 10
	// documentBatchBytes is the text of one batch of document elements.
	documentBatchBytes = 256 << 10
)

// batch is one unit of decode work and its result.
type batch struct {
	// JSON Lines: text is whole lines, final is the input's last block.
	text  []byte
	final bool
	// Documents: the element spans in doc.
	doc   []byte
	spans [][2]int

	events []Event
	lines  int          // lines in text (JSON Lines)
	tail   DroppedTail  // a dropped truncated tail (Line 0: none); Line counts from the block's start
	err    *RecordError // first bad record; Line counts from the block's start
	failed bool         // a document element did not decode
	done   chan struct{}
}

// pipeline decodes batches on workers and hands them to the consumer in the
// order they were submitted.
type pipeline struct {
	work  chan *batch
	order chan *batch
	free  chan *batch
	quit  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

func newPipeline(lazy bool, decode func(d *Decoder, b *batch)) *pipeline {
	workers := runtime.GOMAXPROCS(0)
	inFlight := 2*workers + 2
	p := &pipeline{
		work:  make(chan *batch, inFlight),
		order: make(chan *batch, inFlight),
		free:  make(chan *batch, inFlight),
		quit:  make(chan struct{}),
	}
	for range inFlight {
		p.free <- &batch{done: make(chan struct{}, 1)}
	}
	ranks := new(rankStrings)
	for range workers {
		p.wg.Go(func() {
			d := Decoder{lazy: lazy, ranks: ranks}
			for b := range p.work {
				decode(&d, b)
				b.done <- struct{}{}
			}
		})
	}
	return p
}

// get returns a free batch, or nil once the consumer has stopped.
func (p *pipeline) get() *batch {
	select {
	case <-p.quit:
		return nil
	default:
	}
	select {
	case b := <-p.free:
		return b
	case <-p.quit:
		return nil
	}
}

func (p *pipeline) submit(b *batch) {
	p.order <- b
	p.work <- b
}

// close ends submission (producer side).
func (p *pipeline) close() {
	close(p.work)
	close(p.order)
}

// consume calls handle with each decoded batch in order until handle returns
// false, then drains the rest; it returns once the workers are done.
func (p *pipeline) consume(handle func(b *batch) bool) {
	ok := true
	for b := range p.order {
		<-b.done
		if ok && !handle(b) {
			ok = false
			p.once.Do(func() { close(p.quit) })
		}
		p.free <- b
	}
	p.wg.Wait()
}

// streamJSONL streams r as JSON Lines; head holds bytes already read from r.
func streamJSONL(r io.Reader, head []byte, opts readOptions, fn func([]Event) error) error {
	p := newPipeline(opts.lazy, func(d *Decoder, b *batch) { d.decodeBlock(b) })
	var readErr error
	go func() {
		defer p.close()
		readErr = produceBlocks(p, r, head)
	}()
	var err error
	linesBefore := 0
	p.consume(func(b *batch) bool {
		if b.err != nil {
			e := *b.err
			e.Line += linesBefore
			err = &e
			return false
		}
		if b.tail.Line > 0 && opts.dropped != nil {
			opts.dropped(DroppedTail{Line: linesBefore + b.tail.Line, Bytes: b.tail.Bytes})
		}
		linesBefore += b.lines
		if len(b.events) > 0 {
			if err = fn(b.events); err != nil {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	return readErr
}

// produceBlocks cuts r into blocks of whole lines and submits them; the last
// block, final, holds whatever follows the last newline. It stops early when
// the consumer has.
func produceBlocks(p *pipeline, r io.Reader, head []byte) error {
	var carry []byte // an incomplete line read with the previous block
	carry = append(carry, head...)
	for {
		b := p.get()
		if b == nil {
			return nil
		}
		buf := b.text[:0]
		if cap(buf) < max(blockBytes, 2*len(carry)) {
			buf = make([]byte, 0, max(blockBytes, 2*len(carry)))
		}
		buf = append(buf, carry...)
		for {
			m, err := io.ReadFull(r, buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+m]
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				b.text, b.final = buf, true
				p.submit(b)
				return nil
			}
			if err != nil {
				p.free <- b
				return err
			}
			cut := lastNewline(buf) + 1
			if cut == 0 { // one line longer than the buffer
				buf = append(buf, make([]byte, len(buf))...)[:len(buf)]
				continue
			}
			carry = append(carry[:0], buf[cut:]...)
			b.text, b.final = buf[:cut], false
			p.submit(b)
			break
		}
	}
}

// lastNewline is bytes.LastIndexByte(b, '\n'), which reads a byte at a
// time: a block ends inside a line that may be as long as a member list
// (10 KB at 2 048 ranks). It searches forward with IndexByte's vector
// instructions through a tail of b, widened until it holds a newline.
func lastNewline(b []byte) int {
	for tail := 4 << 10; ; tail *= 4 {
		from, last := max(0, len(b)-tail), -1
		for i := from; ; {
			j := bytes.IndexByte(b[i:], '\n')
			if j < 0 {
				break
			}
			last = i + j
			i = last + 1
		}
		if last >= 0 || from == 0 {
			return last
		}
	}
}

// decodeBlock decodes the lines of b.text: blank lines are skipped, the
// first bad line ends the block with b.err. A final block's last line
// without a newline that is malformed JSON is a truncated tail, dropped.
func (d *Decoder) decodeBlock(b *batch) {
	data := b.text
	b.events, b.err, b.lines, b.tail = b.events[:0], nil, 0, DroppedTail{}
	line := 0
	for pos := 0; pos < len(data); line++ {
		lineEnd, next := len(data), len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			lineEnd = pos + i
			next = lineEnd + 1
		}
		text := data[pos:lineEnd]
		pos = next
		if isBlankLine(text) {
			continue
		}
		if len(b.events) == cap(b.events) {
			b.events = append(b.events, Event{})[:len(b.events)]
		}
		b.events = b.events[:len(b.events)+1]
		if err := d.decodeInto(text, &b.events[len(b.events)-1]); err != nil {
			b.events = b.events[:len(b.events)-1]
			var syn *SyntaxError
			isSyntax := errors.As(err, &syn)
			if isSyntax && b.final && lineEnd == len(data) {
				b.tail = DroppedTail{Line: line + 1, Bytes: len(text)}
				continue
			}
			if isSyntax {
				err = fmt.Errorf("malformed JSON record: %s", syn.Msg)
			}
			b.err = &RecordError{Line: line + 1, Index: -1, Err: err}
			return
		}
	}
	b.lines = line
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

// split is the element spans of the first end bytes of a document.
type split struct {
	end   int
	spans [][2]int
}

// streamDocument reads the rest of r and streams the records of one JSON
// document. Its elements are found by a light scan that only tracks strings
// and brackets (or taken from pre when the first line held the document)
// and decoded in parallel by the strict record decoder, which checks each
// one's syntax in full. When the document is not of a shape the light scan
// knows, nothing has been delivered and streamExact decides as ReadAuto
// always did. A one-line object without a newline, malformed, would be a
// truncated JSON Lines tail (no records, no error): its elements' syntax is
// checked, in parallel, before anything is delivered. When an element does
// not decode, ReadDocument's whole-text check and in-order decode give the
// error.
func streamDocument(in *input, head []byte, pre *split, opts readOptions, fn func([]Event) error) error {
	data, err := in.readRest(head)
	if err != nil {
		return err
	}
	var spans [][2]int
	ok := false
	if pre != nil && isJSONSpace(data[pre.end:]) {
		spans, ok = pre.spans, true
	} else {
		spans, _, ok = splitDocument(data)
	}
	if !ok || (malformedIsTail(data) && !checkSpans(data, spans)) {
		return streamExact(data, opts, fn)
	}
	delivered, ok, err := streamSpans(data, spans, opts.lazy, fn)
	if err != nil || ok {
		return err
	}
	// An element did not decode: the exact reading gives the error. Should
	// it accept the document after all, the records it delivers first are
	// the ones already delivered, decoded the same way: skip them.
	return streamExact(data, opts, func(chunk []Event) error {
		skip := min(delivered, len(chunk))
		delivered -= skip
		if skip == len(chunk) {
			return nil
		}
		return fn(chunk[skip:])
	})
}

// streamExact reads an in-memory input as ReadAuto did before streaming:
// the first line classified strictly, a document read by ReadDocument.
func streamExact(data []byte, opts readOptions, fn func([]Event) error) error {
	lazy := opts.lazy
	deliver := func(events []Event, err error) error {
		if err != nil || len(events) == 0 {
			return err
		}
		return fn(events)
	}
	s := &scanner{data: data}
	switch s.peek() {
	case '[':
		return deliver(readDocument(data, lazy))
	case '{':
		switch firstLineKind(data[s.pos:]) {
		case eventsWrapper:
			return deliver(readDocument(data, lazy))
		case incompleteLine:
			// An incomplete first line that is not part of a valid document
			// is read as JSON Lines, so the error names the bad line.
			s := &scanner{data: data}
			if s.skipValue() == nil && s.expectEnd() == nil {
				return deliver(readDocument(data, lazy))
			}
		}
	}
	return streamJSONL(bytes.NewReader(data), nil, opts, fn)
}

// malformedIsTail reports whether the input, were it malformed, would be a
// truncated JSON Lines tail — an object on one line without a newline, as
// json.dump writes it — and so no records and no error. Only then must the
// syntax of the whole document be known before the first chunk is
// delivered; any other malformed document is an error, whatever was
// delivered before it is found.
func malformedIsTail(data []byte) bool {
	s := &scanner{data: data}
	return s.peek() == '{' && bytes.IndexByte(data[s.pos:], '\n') < 0
}

// checkSpans checks the syntax of each element in parallel, as ReadDocument's
// whole-text check would.
func checkSpans(data []byte, spans [][2]int) bool {
	workers := min(runtime.GOMAXPROCS(0), max(1, len(spans)/64))
	var failed atomic.Bool
	var wg sync.WaitGroup
	for w := range workers {
		part := spans[len(spans)*w/workers : len(spans)*(w+1)/workers]
		wg.Go(func() {
			for _, sp := range part {
				s := &scanner{data: data[sp[0]:sp[1]]}
				if s.skipValue() != nil || s.expectEnd() != nil || failed.Load() {
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	return !failed.Load()
}

func isJSONSpace(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return false
		}
	}
	return true
}

// streamSpans decodes the element spans of data in parallel batches and
// delivers them in order; ok is false when an element did not decode, and
// delivered counts the events fn was given.
func streamSpans(data []byte, spans [][2]int, lazy bool, fn func([]Event) error) (delivered int, ok bool, err error) {
	p := newPipeline(lazy, func(d *Decoder, b *batch) { d.decodeSpans(b) })
	go func() {
		defer p.close()
		for i := 0; i < len(spans); {
			j, size := i, 0
			for j < len(spans) && (j == i || size < documentBatchBytes) {
				size += spans[j][1] - spans[j][0]
				j++
			}
			b := p.get()
			if b == nil {
				return
			}
			b.doc, b.spans = data, spans[i:j]
			p.submit(b)
			i = j
		}
	}()
	ok = true
	p.consume(func(b *batch) bool {
		if b.failed {
			ok = false
			return false
		}
		if len(b.events) > 0 {
			if err = fn(b.events); err != nil {
				return false
			}
			delivered += len(b.events)
		}
		return true
	})
	return delivered, ok, err
}

// decodeSpans decodes b's document elements; any failure sets b.failed.
func (d *Decoder) decodeSpans(b *batch) {
	b.events, b.failed = b.events[:0], false
	if cap(b.events) < len(b.spans) {
		b.events = make([]Event, 0, len(b.spans))
	}
	for _, sp := range b.spans {
		b.events = b.events[:len(b.events)+1]
		if d.decodeInto(b.doc[sp[0]:sp[1]], &b.events[len(b.events)-1]) != nil {
			b.failed = true
			b.events = b.events[:0]
			return
		}
	}
}

// splitDocument finds the records of a JSON document as ReadDocument's
// documentRecords does — the elements of a top-level array, of the "events"
// array of a top-level object, or the object itself — without checking the
// elements' syntax, which their decoding does. ok is false for anything it
// does not handle (malformed structure, no events), which ReadDocument then
// reports.
func splitDocument(data []byte) (spans [][2]int, events, ok bool) {
	s := &scanner{data: data}
	switch s.peek() {
	case '[':
		spans, ok = splitArray(s)
	case '{':
		spans, events, ok = splitWrapper(s)
	}
	if !ok || s.expectEnd() != nil {
		return nil, false, false
	}
	return spans, events, true
}

// splitArray returns the spans of the elements of the array at s.pos and
// moves past it. An element span runs from its first to its last
// non-whitespace byte (or is empty, which decoding rejects).
func splitArray(s *scanner) ([][2]int, bool) {
	data := s.data
	i := s.pos + 1 // past '['
	s.pos = i
	if s.peek() == ']' {
		s.pos++
		return nil, true
	}
	var spans [][2]int
	start := i
	depth := 0
	for i < len(data) {
		switch c := data[i]; c {
		case '"':
			j := skipStringLight(data, i)
			if j < 0 {
				return nil, false
			}
			i = j
			continue
		case '{', '[':
			depth++
			if depth > maxNesting-4 {
				// Near the nesting limit, which ReadDocument counts from the
				// document's root: let it decide.
				return nil, false
			}
		case '}':
			depth--
			if depth < 0 {
				return nil, false
			}
		case ']':
			if depth == 0 {
				spans = append(spans, [2]int{start, i})
				s.pos = i + 1
				return spans, true
			}
			depth--
		case ',':
			if depth == 0 {
				spans = append(spans, [2]int{start, i})
				start = i + 1
			}
		}
		i++
	}
	return nil, false
}

// skipStringLight returns the index after the string starting at data[i]
// ('"'), honouring backslash escapes, or -1 when it does not end.
func skipStringLight(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '"':
			return i + 1
		case '\\':
			i++ // the escaped byte
		}
	}
	return -1
}

// splitWrapper handles a top-level object: the elements of its "events"
// array when it has one (the last "events" key deciding, as in
// documentRecords), else the object itself when it looks like a record.
// Members other than the events array are checked strictly here.
func splitWrapper(s *scanner) (spans [][2]int, events, ok bool) {
	start := s.pos
	s.pos++   // '{'
	s.depth++ // members nest as deep as in documentRecords' walk
	hasEvents, looksLike := false, false
	if s.peek() == '}' {
		s.pos++
		return nil, false, false
	}
	for {
		if s.peek() != '"' {
			return nil, false, false
		}
		kb, err := s.stringBytes()
		if err != nil {
			return nil, false, false
		}
		key := string(kb)
		if s.peek() != ':' {
			return nil, false, false
		}
		s.pos++
		if key == "events" && s.peek() == '[' {
			if spans, ok = splitArray(s); !ok {
				return nil, false, false
			}
			hasEvents = true
		} else {
			if key == "events" {
				hasEvents = false
			}
			if s.skipValue() != nil {
				return nil, false, false
			}
		}
		switch key {
		case "schema_version", "event_type", "type", "memory_allocated", "memory_mb", "timestamp", "timestamp_ns":
			looksLike = true
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			switch {
			case hasEvents:
				return spans, true, true
			case looksLike:
				return [][2]int{{start, s.pos}}, false, true
			}
			return nil, false, false
		default:
			return nil, false, false
		}
	}
}
