package inspector

import (
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxNesting bounds the depth of skipped values so that a hostile line
// cannot exhaust the stack.
const maxNesting = 512

// scanner is a JSON scanner over one record. It accepts RFC 8259 JSON plus
// the bare tokens nan, inf and -inf in number position: the plugin prints
// doubles with printf("%lf"), which writes an infinite bandwidth that way
// (only NaN is quoted by the writer).
type scanner struct {
	data  []byte
	pos   int
	depth int
	buf   []byte // scratch for strings with escapes
}

func (s *scanner) fail(msg string) error {
	return &SyntaxError{Offset: s.pos, Msg: msg}
}

func (s *scanner) skipWS() {
	if s.pos < len(s.data) && s.data[s.pos] > ' ' {
		return // the plugin writes compact JSON
	}
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-whitespace byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.skipWS()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		if s.pos >= len(s.data) {
			return s.fail("unexpected end of record")
		}
		return s.fail("expected '" + string(c) + "'")
	}
	s.pos++
	return nil
}

// object calls member for every key of the object starting at the next
// non-whitespace byte; member must consume the value.
func (s *scanner) object(member func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.fail("expected a key")
		}
		key, err := s.stringBytes()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		case 0:
			return s.fail("unexpected end of record")
		default:
			return s.fail("expected ',' or '}'")
		}
	}
}

// array calls elem for every element of the array starting at the next
// non-whitespace byte; elem must consume the element.
func (s *scanner) array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		case 0:
			return s.fail("unexpected end of record")
		default:
			return s.fail("expected ',' or ']'")
		}
	}
}

// stringBytes scans a JSON string starting at the opening quote and returns
// its decoded bytes. The slice aliases the input when the string has no
// escapes, else the scratch buffer: it is valid until the next call.
func (s *scanner) stringBytes() ([]byte, error) {
	s.pos++ // opening quote
	start := s.pos
	data := s.data
	i := s.pos
	for i < len(data) && !stringStop[data[i]] {
		i++
	}
	s.pos = i
	if i >= len(data) {
		return nil, s.fail("unterminated string")
	}
	switch c := data[i]; {
	case c == '"':
		s.pos++
		return data[start:i], nil
	case c == '\\':
		s.buf = append(s.buf[:0], data[start:i]...)
		return s.escapedString()
	}
	return nil, s.fail("control character in string")
}

// stringStop marks the bytes that end the plain run of a string: the
// closing quote, an escape, a control character.
var stringStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func (s *scanner) escapedString() ([]byte, error) {
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return s.buf, nil
		case c < 0x20:
			return nil, s.fail("control character in string")
		case c != '\\':
			s.buf = append(s.buf, c)
			s.pos++
			continue
		}
		if s.pos+1 >= len(s.data) {
			return nil, s.fail("unterminated string")
		}
		e := s.data[s.pos+1]
		s.pos += 2
		switch e {
		case '"', '\\', '/':
			s.buf = append(s.buf, e)
		case 'b':
			s.buf = append(s.buf, '\b')
		case 'f':
			s.buf = append(s.buf, '\f')
		case 'n':
			s.buf = append(s.buf, '\n')
		case 'r':
			s.buf = append(s.buf, '\r')
		case 't':
			s.buf = append(s.buf, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, s.fail("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if s.pos+1 < len(s.data) && s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
					save := s.pos
					s.pos += 2
					if lo, ok := s.hex4(); ok && utf16.DecodeRune(r, lo) != utf8.RuneError {
						r2 = utf16.DecodeRune(r, lo)
					} else {
						s.pos = save
					}
				}
				r = r2
			}
			s.buf = utf8.AppendRune(s.buf, r)
		default:
			return nil, s.fail("invalid escape")
		}
	}
	return nil, s.fail("unterminated string")
}

func (s *scanner) hex4() (rune, bool) {
	if s.pos+4 > len(s.data) {
		return 0, false
	}
	var r rune
	for _, c := range s.data[s.pos : s.pos+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	s.pos += 4
	return r, true
}

// numberToken scans a number (or nan, inf, -inf) and returns its text.
func (s *scanner) numberToken() ([]byte, error) {
	start := s.pos
	if s.pos < len(s.data) && s.data[s.pos] == '-' {
		s.pos++
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'i' || s.data[s.pos] == 'n') {
		for _, w := range []string{"inf", "nan"} {
			if len(s.data)-s.pos >= len(w) && string(s.data[s.pos:s.pos+len(w)]) == w {
				s.pos += len(w)
				return s.data[start:s.pos], nil
			}
		}
		return nil, s.fail("invalid literal")
	}
	digits := s.pos
	for s.pos < len(s.data) && isDigit(s.data[s.pos]) {
		s.pos++
	}
	if s.pos == digits {
		return nil, s.fail("invalid number")
	}
	if s.data[digits] == '0' && s.pos-digits > 1 {
		return nil, s.fail("leading zero in number")
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		frac := s.pos
		for s.pos < len(s.data) && isDigit(s.data[s.pos]) {
			s.pos++
		}
		if s.pos == frac {
			return nil, s.fail("invalid number")
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		exp := s.pos
		for s.pos < len(s.data) && isDigit(s.data[s.pos]) {
			s.pos++
		}
		if s.pos == exp {
			return nil, s.fail("invalid number")
		}
	}
	return s.data[start:s.pos], nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// skipValue scans past any JSON value.
func (s *scanner) skipValue() error {
	switch c := s.peek(); c {
	case '"':
		_, err := s.stringBytes()
		return err
	case '{', '[':
		s.depth++
		if s.depth > maxNesting {
			return s.fail("nesting too deep")
		}
		var err error
		if c == '{' {
			err = s.object(func([]byte) error { return s.skipValue() })
		} else {
			err = s.array(s.skipValue)
		}
		s.depth--
		return err
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		if len(s.data)-s.pos >= 4 && string(s.data[s.pos:s.pos+4]) == "null" {
			s.pos += 4
			return nil
		}
		_, err := s.numberToken()
		return err
	case 0:
		return s.fail("unexpected end of record")
	default:
		_, err := s.numberToken()
		return err
	}
}

func (s *scanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.fail("invalid literal")
	}
	s.pos += len(word)
	return nil
}

// value kinds a field may hold, for the messages of FieldError.
const (
	wantInt    = "an integer"
	wantUint   = "a non-negative integer"
	wantString = "a string"
	wantNumber = "a number or \"nan\""
)

// intField scans an integer field (no fraction or exponent) into an int64.
func (s *scanner) intField(path string) (int64, error) {
	if c := s.peek(); c != '-' && !isDigit(c) {
		return 0, s.typeError(path, wantInt)
	}
	tok, err := s.numberToken()
	if err != nil {
		return 0, err
	}
	neg := tok[0] == '-'
	digits := tok
	if neg {
		digits = tok[1:]
	}
	u, ok := parseDigits(digits)
	switch {
	case !ok && !isIntegerToken(digits):
		return 0, &FieldError{Field: path, Msg: "must be an integer, got " + string(tok)}
	case !ok:
	case !neg && u <= math.MaxInt64:
		return int64(u), nil
	case neg && u <= 1<<63:
		return int64(-u), nil
	}
	return 0, &FieldError{Field: path, Msg: "must be an integer within 64 bits, got " + string(tok)}
}

// parseDigits reads an unsigned decimal integer (digits only); ok is false
// for anything else, including a value beyond 64 bits.
func parseDigits(tok []byte) (uint64, bool) {
	if len(tok) == 0 || len(tok) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range tok {
		if !isDigit(c) {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// uintField scans a non-negative integer field into a uint64 (the plugin
// writes sizes and timestamps with %lu).
func (s *scanner) uintField(path string) (uint64, error) {
	if !isDigit(s.peek()) {
		if s.peek() == '-' {
			return 0, &FieldError{Field: path, Msg: "must be " + wantUint}
		}
		return 0, s.typeError(path, wantUint)
	}
	tok, err := s.numberToken()
	if err != nil {
		return 0, err
	}
	v, ok := parseDigits(tok)
	if !ok {
		if isIntegerToken(tok) {
			return 0, &FieldError{Field: path, Msg: "must be an integer within 64 bits, got " + string(tok)}
		}
		return 0, &FieldError{Field: path, Msg: "must be " + wantUint + ", got " + string(tok)}
	}
	return v, nil
}

// microsField scans an execution time in µs: the plugin writes an unsigned
// integer (%lu); forks write a double, read rounded down to the µs.
func (s *scanner) microsField(path string) (uint64, error) {
	c := s.peek()
	if !isDigit(c) {
		if c == '-' {
			return 0, &FieldError{Field: path, Msg: "must be " + wantUint}
		}
		return 0, s.typeError(path, wantUint)
	}
	tok, err := s.numberToken()
	if err != nil {
		return 0, err
	}
	if v, ok := parseDigits(tok); ok {
		return v, nil
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || f >= maxUs+1 {
		return 0, &FieldError{Field: path, Msg: "is out of range, got " + string(tok)}
	}
	return uint64(f), nil
}

func isIntegerToken(tok []byte) bool {
	for _, c := range tok {
		if !isDigit(c) {
			return false
		}
	}
	return len(tok) > 0
}

// floatField scans a double: a number, the bare tokens nan/inf/-inf, or the
// string "nan" the writer uses for NaN (any case, as strings go).
func (s *scanner) floatField(path string) (float64, error) {
	c := s.peek()
	if c == '"' {
		b, err := s.stringBytes()
		if err != nil {
			return 0, err
		}
		switch string(b) {
		case "nan", "-nan", "NaN", "NAN":
			return math.NaN(), nil
		case "inf", "Infinity":
			return math.Inf(1), nil
		case "-inf", "-Infinity":
			return math.Inf(-1), nil
		}
		return 0, &FieldError{Field: path, Msg: "must be " + wantNumber + ", got the string " + strconv.Quote(string(b))}
	}
	if c != '-' && c != 'n' && c != 'i' && !isDigit(c) {
		return 0, s.typeError(path, wantNumber)
	}
	tok, err := s.numberToken()
	if err != nil {
		return 0, err
	}
	switch string(tok) {
	case "nan", "-nan":
		return math.NaN(), nil
	case "inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil && v == 0 {
		return 0, &FieldError{Field: path, Msg: "must be " + wantNumber + ", got " + string(tok)}
	}
	return v, nil // ±Inf on overflow, as the writer's own inf
}

// stringField scans a string field.
func (s *scanner) stringField(path string) (string, error) {
	if s.peek() != '"' {
		return "", s.typeError(path, wantString)
	}
	b, err := s.stringBytes()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// typeError names the field and what it holds instead; it consumes the value
// so that a syntax error inside it is still reported as one.
func (s *scanner) typeError(path, want string) error {
	got := "null"
	switch s.peek() {
	case '"':
		got = "a string"
	case '{':
		got = "an object"
	case '[':
		got = "an array"
	case 't', 'f':
		got = "a boolean"
	case 0:
		return s.fail("unexpected end of record")
	case 'n':
	default:
		got = "a number"
	}
	if err := s.skipValue(); err != nil {
		return err
	}
	return &FieldError{Field: path, Msg: "must be " + want + ", got " + got}
}
