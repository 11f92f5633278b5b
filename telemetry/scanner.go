package telemetry

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// maxNesting bounds the depth of nested arrays/objects in one record so a
// hostile line cannot exhaust the stack (Python's json raises RecursionError
// at a similar depth).
const maxNesting = 10000

// SyntaxError reports malformed JSON (as opposed to a well-formed record that
// fails validation). Readers use the distinction for the truncated-tail rule.
type SyntaxError struct {
	Offset int // byte offset in the record
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("malformed JSON at offset %d: %s", e.Offset, e.Msg)
}

// scanner is a strict RFC 8259 JSON scanner over one in-memory record. It is
// hand-written because decoding stormlog JSONL dominates the CLI's run time:
// it decodes straight into Event fields and interns the few distinct short
// strings (event_type, collector, host, ids) instead of allocating each.
type scanner struct {
	data      []byte
	pos       int
	depth     int
	intern    *internTables // nil: no interning
	buf       []byte        // scratch for strings with escapes
	keptLists []string      // member lists skipValue validated, last recognised first (keepList)
	// spliceDepth, when not 0, is the depth at which skipValue notes in
	// splice the first array that is a kept list: a metadata object's
	// member value, which the event then shares instead of copying.
	spliceDepth int
	splice      listSplice
}

// listSplice is a kept list found at data[start:].
type listSplice struct {
	start int
	list  string
}

// internTables are a Decoder's interned values, shared by its scanners.
// Boxed values are shared between metadata maps, which are read-only.
type internTables struct {
	strings map[string]string
	boxed   map[boxKey]any // short metadata strings and numbers as interface values
	// sizes[d] is the size of the last object decoded at depth d: objects at
	// one depth of one stream's metadata tend to have the same keys, and a
	// map made at its final size is not grown and rehashed.
	sizes [8]int
	// members[d][i] is the i-th member of the last object at depth d.
	members [8][16]memberMemo
}

// memberMemo remembers an object member: its key, and its value when that
// is a short string or number, each with the JSON text that stands for it.
// Metadata objects at one depth of a stream list their keys in one order and
// repeat many values: comparing the text saves scanning, looking up and
// boxing them.
type memberMemo struct {
	keyText   []byte // `"key"`; empty when the key's text had escapes
	key       string
	valueText []byte // empty when the value is not remembered
	value     any
}

func (m *memberMemo) keyTextOrNil() []byte {
	if m == nil {
		return nil
	}
	return m.keyText
}

// remember sets the memo's key from its text.
func (m *memberMemo) remember(key string, text []byte) {
	m.key = key
	m.keyText = m.keyText[:0]
	if string(text[1:len(text)-1]) == key {
		m.keyText = append(m.keyText, text...)
	}
	m.valueText, m.value = m.valueText[:0], nil
}

// rememberValue keeps v, decoded from text, when it is a short string
// without escapes or a number.
func (m *memberMemo) rememberValue(v any, text []byte) {
	m.valueText, m.value = m.valueText[:0], nil
	if len(text) > 34 {
		return
	}
	switch x := v.(type) {
	case json.Number:
	case string:
		if string(text[1:len(text)-1]) != x {
			return
		}
	default:
		return
	}
	m.valueText, m.value = append(m.valueText, text...), v
}

// valueAt reports whether the remembered value's text is the value at
// data[pos:]: a string's text ends itself; a number's must not go on.
func (m *memberMemo) valueAt(data []byte, pos int) bool {
	n := len(m.valueText)
	if n == 0 || len(data)-pos < n || string(data[pos:pos+n]) != string(m.valueText) {
		return false
	}
	if m.valueText[0] == '"' || pos+n == len(data) {
		return true
	}
	switch c := data[pos+n]; {
	case c >= '0' && c <= '9', c == '.', c == 'e', c == 'E', c == '+', c == '-':
		return false
	}
	return true
}

type boxKey struct {
	number bool
	text   string
}

// maxInterned bounds each intern table, so a stream of all-distinct values
// costs only the lookups that miss.
const maxInterned = 4096

func newInternTables() *internTables {
	return &internTables{strings: make(map[string]string, 64), boxed: make(map[boxKey]any, 64)}
}

// box returns the text as a string or json.Number in an interface value,
// shared with earlier equal short values.
func (s *scanner) box(b []byte, number bool) any {
	if s.intern == nil || len(b) > 32 {
		if number {
			return json.Number(b)
		}
		return string(b)
	}
	if v, ok := s.intern.boxed[boxKey{number, string(b)}]; ok {
		return v
	}
	var v any = string(b)
	if number {
		v = json.Number(b)
	}
	if len(s.intern.boxed) < maxInterned {
		s.intern.boxed[boxKey{number, string(b)}] = v
	}
	return v
}

func (s *scanner) fail(msg string) error {
	return &SyntaxError{Offset: s.pos, Msg: msg}
}

func (s *scanner) skipWS() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// expectEnd checks that only whitespace follows the value.
func (s *scanner) expectEnd() error {
	s.skipWS()
	if s.pos != len(s.data) {
		return s.fail("unexpected data after the JSON value")
	}
	return nil
}

// peek returns the next non-whitespace byte, or 0 at the end.
func (s *scanner) peek() byte {
	if s.pos < len(s.data) && s.data[s.pos] > ' ' {
		return s.data[s.pos]
	}
	s.skipWS()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *scanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.fail("invalid literal")
	}
	s.pos += len(word)
	return nil
}

// stringBytes scans a JSON string starting at the opening quote and returns
// its decoded bytes. The slice aliases the input when the string has no
// escapes and is valid UTF-8; otherwise it aliases s.buf and is only valid
// until the next call.
func (s *scanner) stringBytes() ([]byte, error) {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return nil, s.fail("expected string")
	}
	s.pos++
	start := s.pos
	ascii := true
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			out := s.data[start:s.pos]
			s.pos++
			if !ascii && !utf8.Valid(out) {
				s.buf = appendValidUTF8(s.buf[:0], out)
				return s.buf, nil
			}
			return out, nil
		case c == '\\':
			return s.slowString(start)
		case c < 0x20:
			return nil, s.fail("control character in string")
		case c >= 0x80:
			ascii = false
		}
		s.pos++
	}
	return nil, s.fail("unterminated string")
}

// slowString decodes a string containing escapes; s.pos is at the first
// backslash and start is the first content byte.
func (s *scanner) slowString(start int) ([]byte, error) {
	b := append(s.buf[:0], s.data[start:s.pos]...)
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			if !utf8.Valid(b) {
				b = appendValidUTF8(nil, b)
			}
			s.buf = b
			return b, nil
		case c < 0x20:
			return nil, s.fail("control character in string")
		case c != '\\':
			b = append(b, c)
			s.pos++
			continue
		}
		s.pos++
		if s.pos >= len(s.data) {
			break
		}
		e := s.data[s.pos]
		s.pos++
		switch e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, s.fail("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A valid pair becomes one rune; a lone surrogate becomes
				// U+FFFD (Go strings cannot hold surrogates).
				save := s.pos
				if s.pos+1 < len(s.data) && s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
					s.pos += 2
					if r2, ok := s.hex4(); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							continue
						}
					}
					s.pos = save
				}
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, r)
		default:
			return nil, s.fail("invalid escape")
		}
	}
	return nil, s.fail("unterminated string")
}

func (s *scanner) hex4() (rune, bool) {
	if len(s.data)-s.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s.data[s.pos : s.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	s.pos += 4
	return r, true
}

func appendValidUTF8(dst, src []byte) []byte {
	for len(src) > 0 {
		r, n := utf8.DecodeRune(src)
		dst = utf8.AppendRune(dst, r)
		src = src[n:]
	}
	return dst
}

// str scans a string value and returns it as a Go string, interning short
// values when asked and an intern table is set.
func (s *scanner) str(intern bool) (string, error) {
	b, err := s.stringBytes()
	if err != nil {
		return "", err
	}
	if intern {
		return s.internBytes(b), nil
	}
	return string(b), nil
}

// internBytes returns b as a string, shared with earlier equal short strings.
func (s *scanner) internBytes(b []byte) string {
	if s.intern == nil || len(b) > 64 {
		return string(b)
	}
	if v, ok := s.intern.strings[string(b)]; ok {
		return v
	}
	v := string(b)
	if len(s.intern.strings) < maxInterned {
		s.intern.strings[v] = v
	}
	return v
}

// numberKind classifies a JSON number lexeme.
type numberKind uint8

const (
	numInt      numberKind = iota // integer lexeme that fits int64
	numBigInt                     // integer lexeme outside int64
	numFraction                   // has a fraction or exponent (a Python float)
)

// number scans a JSON number and returns its lexeme and kind; for numInt the
// value is returned too.
func (s *scanner) number() ([]byte, numberKind, int64, error) {
	start := s.pos
	d := s.data
	i := s.pos
	neg := false
	if i < len(d) && d[i] == '-' {
		neg = true
		i++
	}
	if i >= len(d) {
		s.pos = i
		return nil, 0, 0, s.fail("invalid number")
	}
	var v uint64
	overflow := false
	switch {
	case d[i] == '0':
		i++
	case d[i] >= '1' && d[i] <= '9':
		// 18 digits stay below 10^18 and cannot overflow; only longer
		// numbers are checked digit by digit. Counters and timestamps
		// have 10 to 19 digits: eight at a time first.
		unchecked := min(len(d), i+18)
		for ; i+8 <= unchecked; i += 8 {
			x := binary.LittleEndian.Uint64(d[i:])
			if !eightDigits(x) {
				break
			}
			v = v*100000000 + eightDigitsValue(x)
		}
		for ; i < unchecked && d[i]-'0' <= 9; i++ {
			v = v*10 + uint64(d[i]-'0')
		}
		for ; i < len(d) && d[i]-'0' <= 9; i++ {
			digit := uint64(d[i] - '0')
			if v > (1<<63)/10 || v*10 > (1<<63)-digit {
				overflow = true
			} else {
				v = v*10 + digit
			}
		}
	default:
		s.pos = i
		return nil, 0, 0, s.fail("invalid number")
	}
	kind := numInt
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			s.pos = i
			return nil, 0, 0, s.fail("invalid number")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		kind = numFraction
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			s.pos = i
			return nil, 0, 0, s.fail("invalid number")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		kind = numFraction
	}
	s.pos = i
	lex := d[start:i]
	if kind == numFraction {
		return lex, kind, 0, nil
	}
	if overflow || (!neg && v > 1<<63-1) {
		return lex, numBigInt, 0, nil
	}
	if neg {
		return lex, numInt, -int64(v), nil
	}
	return lex, numInt, int64(v), nil
}

// eightDigits reports whether the eight bytes of x (little endian) are all
// ASCII digits: each byte's high nibble is 3, and adding 6 leaves it 3
// (bytes ':' to '?' carry into the high nibble).
func eightDigits(x uint64) bool {
	const hi, six = 0xF0F0F0F0F0F0F0F0, 0x0606060606060606
	return x&hi == 0x3030303030303030 && (x+six)&hi == 0x3030303030303030
}

// eightDigitsValue is the number the eight ASCII digits of x spell, the
// first byte (lowest) most significant: pairs, then quads, then the halves
// are combined in place.
func eightDigitsValue(x uint64) uint64 {
	x -= 0x3030303030303030
	x = (x*10 + x>>8) & 0x00FF00FF00FF00FF
	x = (x*100 + x>>16) & 0x0000FFFF0000FFFF
	return (x*10000 + x>>32) & 0xFFFFFFFF
}

// value decodes any JSON value into the metadata representation: string,
// json.Number, bool, nil, []any or map[string]any.
func (s *scanner) value() (any, error) {
	switch c := s.peek(); {
	case c == '"':
		b, err := s.stringBytes()
		if err != nil {
			return nil, err
		}
		return s.box(b, false), nil
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == 't':
		return true, s.literal("true")
	case c == 'f':
		return false, s.literal("false")
	case c == 'n':
		return nil, s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		lex, _, _, err := s.number()
		if err != nil {
			return nil, err
		}
		return s.box(lex, true), nil
	case c == 0:
		return nil, s.fail("unexpected end of input")
	default:
		return nil, s.fail(fmt.Sprintf("invalid character %q", c))
	}
}

func (s *scanner) enter() error {
	s.depth++
	if s.depth > maxNesting {
		return s.fail("nesting too deep")
	}
	return nil
}

// object decodes an object; duplicate keys keep the last value, as Python's
// json does.
func (s *scanner) object() (map[string]any, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer func() { s.depth-- }()
	s.pos++ // '{'
	var m map[string]any
	if s.peek() == '}' {
		s.pos++
		return map[string]any{}, nil
	}
	size := 4
	if s.intern != nil && s.depth < len(s.intern.sizes) {
		size = max(size, s.intern.sizes[s.depth])
		defer func() { s.intern.sizes[s.depth] = len(m) }()
	}
	for i := 0; ; i++ {
		if s.peek() != '"' {
			return nil, s.fail("expected object key")
		}
		var memo *memberMemo
		if s.intern != nil && s.depth < len(s.intern.members) && i < len(s.intern.members[0]) {
			memo = &s.intern.members[s.depth][i]
		}
		var k string
		if n := len(memo.keyTextOrNil()); n > 0 && len(s.data)-s.pos >= n && string(s.data[s.pos:s.pos+n]) == string(memo.keyText) {
			k = memo.key
			s.pos += n
		} else {
			start := s.pos
			var err error
			if k, err = s.str(true); err != nil {
				return nil, err
			}
			if memo != nil {
				memo.remember(k, s.data[start:s.pos])
			}
		}
		if s.peek() != ':' {
			return nil, s.fail("expected ':' after object key")
		}
		s.pos++
		var v any
		if s.peek() != 0 && memo != nil && memo.valueAt(s.data, s.pos) {
			v = memo.value
			s.pos += len(memo.valueText)
		} else {
			start := s.pos
			var err error
			if v, err = s.value(); err != nil {
				return nil, err
			}
			if memo != nil {
				memo.rememberValue(v, s.data[start:s.pos])
			}
		}
		if m == nil {
			m = make(map[string]any, size)
		}
		m[k] = v
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return m, nil
		default:
			return nil, s.fail("expected ',' or '}' in object")
		}
	}
}

func (s *scanner) array() ([]any, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer func() { s.depth-- }()
	s.pos++ // '['
	out := []any{}
	if s.peek() == ']' {
		s.pos++
		return out, nil
	}
	for {
		v, err := s.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return out, nil
		default:
			return nil, s.fail("expected ',' or ']' in array")
		}
	}
}

// minKeptList is the shortest array text skipValue keeps to recognise:
// a communicator's member list (nccl.comm.ranks), repeated on every marker
// of its members, is validated once and then recognised by comparing its
// bytes, and markers share one copy of its text (docs/sizing.md).
const minKeptList = 64

// maxKeptLists is how many lists a scanner keeps: a rank's markers
// alternate between the few communicators it belongs to (tensor, pipeline,
// data parallel and the world).
const maxKeptLists = 8

// keepList keeps text, an array just validated, when it is a member list:
// long, flat (no nested array or object: its depth adds one level wherever
// it recurs) and without strings (so that a reader looking for strings may
// skip it). It returns the kept text, "" when not kept.
func (s *scanner) keepList(text []byte) string {
	inner := text[1:]
	if len(text) < minKeptList || bytes.IndexByte(inner, '[') >= 0 || bytes.IndexByte(inner, '{') >= 0 || bytes.IndexByte(inner, '"') >= 0 {
		return ""
	}
	if len(s.keptLists) < maxKeptLists {
		s.keptLists = append(s.keptLists, "")
	}
	copy(s.keptLists[1:], s.keptLists)
	s.keptLists[0] = string(text)
	return s.keptLists[0]
}

// keptListAt returns the kept list whose text data[pos:] begins with (a
// complete array's text ends at its own closing bracket, so that is the
// array there), and moves it first.
func (s *scanner) keptListAt(pos int) (string, bool) {
	rest := s.data[pos:]
	for i, list := range s.keptLists {
		if len(rest) >= len(list) && string(rest[:len(list)]) == list {
			if i > 0 {
				copy(s.keptLists[1:i+1], s.keptLists[:i])
				s.keptLists[0] = list
			}
			return list, true
		}
	}
	return "", false
}

// noteList records a kept list found at start when skipValue is at the
// splice depth and none was found yet.
func (s *scanner) noteList(start int, list string) {
	if list != "" && s.depth == s.spliceDepth && s.splice.list == "" {
		s.splice = listSplice{start, list}
	}
}

// skipValue validates and skips one value without building it. An array
// that is a kept list again is skipped without a second validation.
func (s *scanner) skipValue() error {
	switch c := s.peek(); {
	case c == '"':
		_, err := s.stringBytes()
		return err
	case c == '{' || c == '[':
		if err := s.enter(); err != nil {
			return err
		}
		defer func() { s.depth-- }()
		start := s.pos
		if c == '[' {
			if list, ok := s.keptListAt(start); ok {
				s.pos += len(list)
				s.noteList(start, list)
				return nil
			}
		}
		s.pos++
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		if s.peek() == closer {
			s.pos++
			return nil
		}
		for {
			if c == '{' {
				if s.peek() != '"' {
					return s.fail("expected object key")
				}
				if _, err := s.stringBytes(); err != nil {
					return err
				}
				if s.peek() != ':' {
					return s.fail("expected ':' after object key")
				}
				s.pos++
			}
			if err := s.skipValue(); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.pos++
			case closer:
				s.pos++
				if c == '[' {
					s.noteList(start, s.keepList(s.data[start:s.pos]))
				}
				return nil
			default:
				return s.fail("expected ',' or closing bracket")
			}
		}
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, _, err := s.number()
		return err
	default:
		_, err := s.value()
		return err
	}
}
