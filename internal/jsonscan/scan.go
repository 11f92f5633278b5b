// Package jsonscan is a JSON Scanner over one in-memory document for the
// readers of machine-written formats (NCCL Inspector records, profiler
// traces): it walks objects and arrays by callback, reads strings without
// allocating when they have no escapes, and skips what its caller does not
// want. It accepts RFC 8259 JSON plus the bare tokens nan, inf and -inf in
// number position (printf("%lf") writes them).
package jsonscan

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxNesting bounds the depth of skipped values so that a hostile line
// cannot exhaust the stack.
const maxNesting = 512

// Scanner is a JSON Scanner over one record. It accepts RFC 8259 JSON plus
// the bare tokens nan, inf and -inf in number position: the plugin prints
// doubles with printf("%lf"), which writes an infinite bandwidth that way
// (only NaN is quoted by the writer).
type Scanner struct {
	data  []byte
	pos   int
	depth int
	buf   []byte // scratch for strings with escapes
	// escaped: the last StringBytes returned buf.
	escaped bool
}

// Reset starts scanning data, keeping the scratch buffer.
func (s *Scanner) Reset(data []byte) {
	s.data, s.pos, s.depth, s.buf = data, 0, 0, s.buf[:0]
}

// Release drops the reference to the scanned data.
func (s *Scanner) Release() { s.data = nil }

// Pos is the offset of the next byte to scan.
func (s *Scanner) Pos() int { return s.pos }

// SkipContainer skips the object or array at the next non-whitespace byte
// by matching its brackets outside strings, without checking what is
// between them: for the large values a reader does not read, where a
// full scan costs several times more. Unbalanced brackets or an
// unterminated string are a *SyntaxError.
func (s *Scanner) SkipContainer() error {
	if c := s.Peek(); c != '{' && c != '[' {
		return s.Fail("expected an object or an array")
	}
	data, depth := s.data, 0
	for i := s.pos; i < len(data); i++ {
		if !containerStop[data[i]] {
			continue
		}
		switch data[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.pos = i + 1
				return nil
			}
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			if i >= len(data) {
				s.pos = len(data)
				return s.Fail("unterminated string")
			}
		}
	}
	s.pos = len(data)
	return s.Fail("unexpected end of data")
}

// isSpace marks JSON's whitespace.
var isSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// containerStop marks the bytes SkipContainer looks at: brackets and the
// quote that starts a string; one load per byte skips the rest.
var containerStop = [256]bool{'{': true, '[': true, '}': true, ']': true, '"': true}

// SkipNull consumes the next value when it is null and reports whether it
// was.
func (s *Scanner) SkipNull() bool {
	if s.Peek() == 'n' && len(s.data)-s.pos >= 4 && string(s.data[s.pos:s.pos+4]) == "null" {
		s.pos += 4
		return true
	}
	return false
}

// Scratch reports whether the last StringBytes returned the scratch
// buffer (the string had escapes), which the next one reuses.
func (s *Scanner) Scratch() bool { return s.escaped }

// Slice is the text from start to the current position (it aliases the
// document).
func (s *Scanner) Slice(start int) []byte { return s.data[start:s.pos] }

// AtEnd reports whether only whitespace is left.
func (s *Scanner) AtEnd() bool {
	s.skipWS()
	return s.pos == len(s.data)
}

func (s *Scanner) Fail(msg string) error {
	return &SyntaxError{Offset: s.pos, Msg: msg}
}

func (s *Scanner) skipWS() {
	if s.pos < len(s.data) && s.data[s.pos] > ' ' {
		return // compact JSON: nothing to skip
	}
	if s.pos+1 < len(s.data) && s.data[s.pos] == ' ' && s.data[s.pos+1] > ' ' {
		s.pos++ // json.dumps' ", " and ": "
		return
	}
	// Indented JSON (Kineto's traces, json.dumps(indent=...)): a newline
	// and a run of spaces before most tokens.
	data, i := s.data, s.pos
	for i < len(data) && isSpace[data[i]] {
		i++
	}
	s.pos = i
}

// Peek returns the next non-whitespace byte, or 0 at the end.
func (s *Scanner) Peek() byte {
	s.skipWS()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *Scanner) expect(c byte) error {
	if s.Peek() != c {
		if s.pos >= len(s.data) {
			return s.Fail("unexpected end of record")
		}
		return s.Fail("expected '" + string(c) + "'")
	}
	s.pos++
	return nil
}

// Object calls member for every key of the Object starting at the next
// non-whitespace byte; member must consume the value.
func (s *Scanner) Object(member func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.Peek() == '}' {
		s.pos++
		return nil
	}
	for {
		if s.Peek() != '"' {
			return s.Fail("expected a key")
		}
		key, err := s.StringBytes()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		switch s.Peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		case 0:
			return s.Fail("unexpected end of record")
		default:
			return s.Fail("expected ',' or '}'")
		}
	}
}

// Array calls elem for every element of the Array starting at the next
// non-whitespace byte; elem must consume the element.
func (s *Scanner) Array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.Peek() == ']' {
		s.pos++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.Peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		case 0:
			return s.Fail("unexpected end of record")
		default:
			return s.Fail("expected ',' or ']'")
		}
	}
}

// StringBytes scans a JSON string starting at the opening quote and returns
// its decoded bytes. The slice aliases the input when the string has no
// escapes, else the scratch buffer: it is valid until the next call.
func (s *Scanner) StringBytes() ([]byte, error) {
	s.escaped = false
	s.pos++ // opening quote
	start := s.pos
	data := s.data
	i := s.pos
	for i < len(data) && !stringStop[data[i]] {
		i++
	}
	s.pos = i
	if i >= len(data) {
		return nil, s.Fail("unterminated string")
	}
	switch c := data[i]; {
	case c == '"':
		s.pos++
		return data[start:i], nil
	case c == '\\':
		s.buf = append(s.buf[:0], data[start:i]...)
		s.escaped = true
		return s.escapedString()
	}
	return nil, s.Fail("control character in string")
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

func (s *Scanner) escapedString() ([]byte, error) {
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return s.buf, nil
		case c < 0x20:
			return nil, s.Fail("control character in string")
		case c != '\\':
			s.buf = append(s.buf, c)
			s.pos++
			continue
		}
		if s.pos+1 >= len(s.data) {
			return nil, s.Fail("unterminated string")
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
				return nil, s.Fail("invalid \\u escape")
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
			return nil, s.Fail("invalid escape")
		}
	}
	return nil, s.Fail("unterminated string")
}

func (s *Scanner) hex4() (rune, bool) {
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

// NumberToken scans a number (or nan, inf, -inf) and returns its text.
func (s *Scanner) NumberToken() ([]byte, error) {
	start := s.pos
	// A number without sign, leading zero or exponent, the most common
	// kind (an integer, or µs with a fraction as trace writers print
	// times), in one loop.
	data, i := s.data, s.pos
	for i < len(data) && IsDigit(data[i]) {
		i++
	}
	if n := i - start; n > 0 && (n == 1 || data[start] != '0') {
		end := i
		if i < len(data) && data[i] == '.' {
			for end = i + 1; end < len(data) && IsDigit(data[end]); end++ {
			}
			if end == i+1 {
				end = 0 // "1." is not a number
			}
		}
		if end > 0 && (end == len(data) || (data[end] != 'e' && data[end] != 'E')) {
			s.pos = end
			return data[start:end], nil
		}
	}
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
		return nil, s.Fail("invalid literal")
	}
	digits := s.pos
	for s.pos < len(s.data) && IsDigit(s.data[s.pos]) {
		s.pos++
	}
	if s.pos == digits {
		return nil, s.Fail("invalid number")
	}
	if s.data[digits] == '0' && s.pos-digits > 1 {
		return nil, s.Fail("leading zero in number")
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		frac := s.pos
		for s.pos < len(s.data) && IsDigit(s.data[s.pos]) {
			s.pos++
		}
		if s.pos == frac {
			return nil, s.Fail("invalid number")
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		exp := s.pos
		for s.pos < len(s.data) && IsDigit(s.data[s.pos]) {
			s.pos++
		}
		if s.pos == exp {
			return nil, s.Fail("invalid number")
		}
	}
	return s.data[start:s.pos], nil
}

func IsDigit(c byte) bool { return '0' <= c && c <= '9' }

// SkipValue scans past any JSON value.
func (s *Scanner) SkipValue() error {
	switch c := s.Peek(); c {
	case '"':
		_, err := s.StringBytes()
		return err
	case '{', '[':
		s.depth++
		if s.depth > maxNesting {
			return s.Fail("nesting too deep")
		}
		var err error
		if c == '{' {
			err = s.Object(func([]byte) error { return s.SkipValue() })
		} else {
			err = s.Array(s.SkipValue)
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
		_, err := s.NumberToken()
		return err
	case 0:
		return s.Fail("unexpected end of record")
	default:
		_, err := s.NumberToken()
		return err
	}
}

func (s *Scanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.Fail("invalid literal")
	}
	s.pos += len(word)
	return nil
}

// value kinds a field may hold, for the messages of FieldError.
const (
	WantInt    = "an integer"
	WantUint   = "a non-negative integer"
	WantString = "a string"
	WantNumber = "a number or \"nan\""
)

// IntField scans an integer field (no fraction or exponent) into an int64.
func (s *Scanner) IntField(path string) (int64, error) {
	if s.pos < len(s.data) && IsDigit(s.data[s.pos]) {
		if v, ok := s.ShortInt(); ok {
			return v, nil // without whitespace to skip
		}
	}
	if c := s.Peek(); c != '-' && !IsDigit(c) {
		return 0, s.TypeError(path, WantInt)
	}
	if v, ok := s.ShortInt(); ok {
		return v, nil
	}
	tok, err := s.NumberToken()
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

// ShortInt reads, in one pass and without skipping whitespace, an integer
// of at most 19 digits (one that fits in a uint64: nanosecond timestamps
// have 19) without a leading zero, fraction or exponent, within int64; for
// anything else it consumes nothing and IntField's full path decides.
func (s *Scanner) ShortInt() (int64, bool) {
	data, i := s.data, s.pos
	neg := i < len(data) && data[i] == '-'
	if neg {
		i++
	}
	start := i
	var u uint64
	// Nanosecond timestamps have 19 digits: eight at a time while a
	// block stays within 19 (two blocks), then one by one. Past 19 the
	// sum may wrap; such a number is declined below.
	for ; i+8 <= len(data) && i-start <= 11; i += 8 {
		x := binary.LittleEndian.Uint64(data[i:])
		if !eightDigits(x) {
			break
		}
		u = u*100_000_000 + eightDigitsValue(x)
	}
	for ; i < len(data) && IsDigit(data[i]); i++ {
		u = u*10 + uint64(data[i]-'0')
	}
	n := i - start
	switch {
	case n == 0 || n > 19 || (n > 1 && data[start] == '0'):
		return 0, false
	case i < len(data) && (data[i] == '.' || data[i] == 'e' || data[i] == 'E'):
		return 0, false
	case neg && u <= 1<<63:
		s.pos = i
		return int64(-u), true
	case !neg && u <= math.MaxInt64:
		s.pos = i
		return int64(u), true
	}
	return 0, false
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
// are combined in place (three multiplies instead of eight).
func eightDigitsValue(x uint64) uint64 {
	x -= 0x3030303030303030
	x = (x*10 + x>>8) & 0x00FF00FF00FF00FF
	x = (x*100 + x>>16) & 0x0000FFFF0000FFFF
	return (x*10000 + x>>32) & 0xFFFFFFFF
}

// parseDigits reads an unsigned decimal integer (digits only); ok is false
// for anything else, including a value beyond 64 bits.
func parseDigits(tok []byte) (uint64, bool) {
	if len(tok) == 0 || len(tok) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range tok {
		if !IsDigit(c) {
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

// UintField scans a non-negative integer field into a uint64 (the plugin
// writes sizes and timestamps with %lu).
func (s *Scanner) UintField(path string) (uint64, error) {
	if !IsDigit(s.Peek()) {
		if s.Peek() == '-' {
			return 0, &FieldError{Field: path, Msg: "must be " + WantUint}
		}
		return 0, s.TypeError(path, WantUint)
	}
	tok, err := s.NumberToken()
	if err != nil {
		return 0, err
	}
	v, ok := parseDigits(tok)
	if !ok {
		if isIntegerToken(tok) {
			return 0, &FieldError{Field: path, Msg: "must be an integer within 64 bits, got " + string(tok)}
		}
		return 0, &FieldError{Field: path, Msg: "must be " + WantUint + ", got " + string(tok)}
	}
	return v, nil
}

// FloorUintField scans a non-negative integer, or a non-negative number
// rounded down, of at most limit (some writers print a count as a double).
func (s *Scanner) FloorUintField(path string, limit uint64) (uint64, error) {
	c := s.Peek()
	if !IsDigit(c) {
		if c == '-' {
			return 0, &FieldError{Field: path, Msg: "must be " + WantUint}
		}
		return 0, s.TypeError(path, WantUint)
	}
	tok, err := s.NumberToken()
	if err != nil {
		return 0, err
	}
	if v, ok := parseDigits(tok); ok && v <= limit {
		return v, nil
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || f >= float64(limit)+1 {
		return 0, &FieldError{Field: path, Msg: "is out of range, got " + string(tok)}
	}
	return uint64(f), nil
}

func isIntegerToken(tok []byte) bool {
	for _, c := range tok {
		if !IsDigit(c) {
			return false
		}
	}
	return len(tok) > 0
}

// FloatField scans a double: a number, the bare tokens nan/inf/-inf, or the
// string "nan" the writer uses for NaN (any case, as strings go).
func (s *Scanner) FloatField(path string) (float64, error) {
	c := s.Peek()
	if c == '"' {
		b, err := s.StringBytes()
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
		return 0, &FieldError{Field: path, Msg: "must be " + WantNumber + ", got the string " + strconv.Quote(string(b))}
	}
	if c != '-' && c != 'n' && c != 'i' && !IsDigit(c) {
		return 0, s.TypeError(path, WantNumber)
	}
	if v, n := plainDecimal(s.data[s.pos:]); n > 0 {
		s.pos += n
		return v, nil
	}
	tok, err := s.NumberToken()
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
	if v, ok := shortDecimal(tok); ok {
		return v, nil
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil && v == 0 {
		return 0, &FieldError{Field: path, Msg: "must be " + WantNumber + ", got " + string(tok)}
	}
	return v, nil // ±Inf on overflow, as the writer's own inf
}

// shortDecimal reads a whole number token of at most 15 digits without an
// exponent ("-2.675") as ParseFloat would (plainDecimal, with the sign);
// ok is false for any other token.
func shortDecimal(tok []byte) (float64, bool) {
	neg := len(tok) > 0 && tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	v, n := plainDecimal(tok)
	if n == 0 || n != len(tok) {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// plainDecimal reads a non-negative decimal without exponent and with at
// most 15 digits, as writers mostly print durations and sizes ("150.25"),
// in one pass; n is the bytes it read, 0 when b starts with anything else.
// Its digits and the power of ten are exact doubles, so one correctly
// rounded division gives ParseFloat's correctly rounded value.
func plainDecimal(b []byte) (v float64, n int) {
	var mant uint64
	digits, frac := 0, -1
	i := 0
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case IsDigit(c):
			mant = mant*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
			continue
		case c == '.' && frac < 0 && digits > 0:
			frac = 0
			continue
		}
		break
	}
	switch {
	case digits == 0 || digits > 15 || frac == 0:
		return 0, 0 // none, too long, or "1."
	case b[0] == '0' && i > 1 && b[1] != '.':
		return 0, 0 // a leading zero: not JSON
	case i < len(b) && (b[i] == 'e' || b[i] == 'E' || b[i] == '.'):
		return 0, 0
	}
	v = float64(mant)
	if frac > 0 {
		v /= exactPow10[frac]
	}
	return v, i
}

// exactPow10 are the powers of ten a double holds exactly.
var exactPow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// StringField scans a string field.
func (s *Scanner) StringField(path string) (string, error) {
	if s.Peek() != '"' {
		return "", s.TypeError(path, WantString)
	}
	b, err := s.StringBytes()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// TypeError names the field and what it holds instead; it consumes the value
// so that a syntax error inside it is still reported as one.
func (s *Scanner) TypeError(path, want string) error {
	got := "null"
	switch s.Peek() {
	case '"':
		got = "a string"
	case '{':
		got = "an Object"
	case '[':
		got = "an Array"
	case 't', 'f':
		got = "a boolean"
	case 0:
		return s.Fail("unexpected end of record")
	case 'n':
	default:
		got = "a number"
	}
	if err := s.SkipValue(); err != nil {
		return err
	}
	return &FieldError{Field: path, Msg: "must be " + want + ", got " + got}
}

// SyntaxError reports a document that is not well-formed JSON.
type SyntaxError struct {
	Offset int // byte offset in the document
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("malformed JSON at offset %d: %s", e.Offset, e.Msg)
}

// FieldError reports a well-formed document whose field is missing, of the
// wrong type or out of range. Field is the key's path, e.g. "header.rank".
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + " " + e.Msg }
