package jsonscan

// The stepping functions walk an object or array without a callback, for
// the hot loops of readers (one call per member instead of a closure, a
// key copy and a dispatch through an interface):
//
//	more, err := s.OpenObject()
//	for more && err == nil {
//		key, err := s.Key()
//		... consume the value ...
//		more, err = s.NextMember()
//	}
//
// They accept and reject exactly what Object and Array do, with the same
// messages at the same offsets.

// OpenObject consumes the '{' at the next non-whitespace byte, and the
// '}' of an empty object; more reports whether a member follows.
func (s *Scanner) OpenObject() (more bool, err error) {
	if err := s.expect('{'); err != nil {
		return false, err
	}
	if s.Peek() == '}' {
		s.pos++
		return false, nil
	}
	return true, nil
}

// Key reads a member's key and its ':'; the value is next.
func (s *Scanner) Key() ([]byte, error) {
	if s.Peek() != '"' {
		return nil, s.Fail("expected a key")
	}
	key, err := s.StringBytes()
	if err != nil {
		return nil, err
	}
	// json.dumps writes ": ", compact writers ":".
	if s.pos < len(s.data) && s.data[s.pos] == ':' {
		s.pos++
		return key, nil
	}
	if err := s.expect(':'); err != nil {
		return nil, err
	}
	return key, nil
}

// NextMember consumes the ',' or '}' after a member's value; more reports
// whether another member follows.
func (s *Scanner) NextMember() (more bool, err error) {
	if s.pos < len(s.data) && s.data[s.pos] == ',' {
		s.pos++
		s.skipWS()
		return true, nil
	}
	switch s.Peek() {
	case ',':
		s.pos++
		s.skipWS() // json.dumps' ", ": the next Peek finds the key at once
		return true, nil
	case '}':
		s.pos++
		return false, nil
	case 0:
		return false, s.Fail("unexpected end of record")
	default:
		return false, s.Fail("expected ',' or '}'")
	}
}

// OpenArray consumes the '[' at the next non-whitespace byte, and the ']'
// of an empty array; more reports whether an element follows.
func (s *Scanner) OpenArray() (more bool, err error) {
	if err := s.expect('['); err != nil {
		return false, err
	}
	if s.Peek() == ']' {
		s.pos++
		return false, nil
	}
	return true, nil
}

// NextElement consumes the ',' or ']' after an element; more reports
// whether another element follows.
func (s *Scanner) NextElement() (more bool, err error) {
	switch s.Peek() {
	case ',':
		s.pos++
		return true, nil
	case ']':
		s.pos++
		return false, nil
	case 0:
		return false, s.Fail("unexpected end of record")
	default:
		return false, s.Fail("expected ',' or ']'")
	}
}

// SkipKey consumes the key q, given quoted and without escapes (`"name"`),
// and its ':' when they are next, and reports whether they were: a reader
// whose records repeat their keys in order checks the one it expects with
// a single comparison. When they are not, it consumes nothing, and Key
// reads (or rejects) what is there.
func (s *Scanner) SkipKey(q string) bool {
	// The writer's own layout, `"key": ` with the key next, in one test.
	if d := s.data[s.pos:]; len(q) > 0 && len(d) > len(q) && d[len(q)] == ':' && string(d[:len(q)]) == q {
		s.pos += len(q) + 1
		s.skipWS()
		return true
	}
	if len(q) == 0 || s.Peek() != '"' {
		return false
	}
	start := s.pos
	if len(s.data)-start <= len(q) || string(s.data[start:start+len(q)]) != q {
		return false
	}
	s.pos += len(q)
	if s.Peek() == ':' {
		s.pos++
		s.skipWS()
		return true
	}
	s.pos = start
	return false
}

// Rest is the text not yet scanned (it aliases the document), for a
// reader's own fast path over a layout it expects; Advance moves past n
// bytes of it. A fast path that meets anything else advances by nothing
// and lets the Scanner's methods read (or reject) the value.
func (s *Scanner) Rest() []byte { return s.data[s.pos:] }

// Advance moves past n bytes of Rest.
func (s *Scanner) Advance(n int) { s.pos += n }
