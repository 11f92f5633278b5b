package jsonscan

import (
	"errors"
	"testing"
)

func TestSkipContainer(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		wantEnd int // position after the container, -1: a SyntaxError
	}{
		{`{"a": [1, {"b": "}]"}], "c": "\"{"} ,`, 35},
		{`[[], {}]x`, 8},
		{`  {}`, 4},
		{`{"a": "unterminated}`, -1},
		{`{"a": [1, 2}`, -1}, // brackets are counted, not paired: still open
		{`"string"`, -1},
	} {
		var s Scanner
		s.Reset([]byte(tc.doc))
		err := s.SkipContainer()
		var se *SyntaxError
		switch {
		case tc.wantEnd < 0 && !errors.As(err, &se):
			t.Errorf("%q: error %v, want a SyntaxError", tc.doc, err)
		case tc.wantEnd >= 0 && (err != nil || s.Pos() != tc.wantEnd):
			t.Errorf("%q: at %d, error %v; want %d", tc.doc, s.Pos(), err, tc.wantEnd)
		}
	}
}

func TestSkipNullAndFloorUint(t *testing.T) {
	var s Scanner
	s.Reset([]byte(` null, nan`))
	if !s.SkipNull() || s.Pos() != 5 {
		t.Fatalf("null not skipped: at %d", s.Pos())
	}
	s.Reset([]byte(`nan`))
	if s.SkipNull() || s.Pos() != 0 {
		t.Fatal("nan taken for null")
	}
	for doc, want := range map[string]uint64{`41057`: 41057, `41057.75`: 41057, `0.5`: 0, `100`: 100} {
		s.Reset([]byte(doc))
		if v, err := s.FloorUintField("x", 100000); err != nil || v != want {
			t.Errorf("%s: %d %v, want %d", doc, v, err, want)
		}
	}
	for _, doc := range []string{`100001`, `-1`, `"5"`, `1e300`} {
		s.Reset([]byte(doc))
		var fe *FieldError
		if _, err := s.FloorUintField("x", 100000); !errors.As(err, &fe) {
			t.Errorf("%s: error %v, want a FieldError", doc, err)
		}
	}
}

// FuzzSkipContainer: SkipContainer never panics, and on a document that a
// full scan accepts it ends where the full scan ends.
func FuzzSkipContainer(f *testing.F) {
	for _, doc := range []string{`{"a": [1, {"b": "}]"}]}`, `[[], {}]`, `{"a": "\\\""}`} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var fast, full Scanner
		fast.Reset(doc)
		full.Reset(doc)
		c := full.Peek()
		errFast := fast.SkipContainer()
		if (c != '{' && c != '[') || full.SkipValue() != nil {
			return
		}
		if errFast != nil || fast.Pos() != full.Pos() {
			t.Fatalf("%q: container skipped to %d (%v), value to %d", doc, fast.Pos(), errFast, full.Pos())
		}
	})
}

// NumberToken reads one JSON number (or the writer's bare inf/nan) and
// refuses what JSON does not allow, on its fast path and off it.
func TestNumberToken(t *testing.T) {
	for _, tc := range []struct {
		in, tok string
		bad     bool
	}{
		{in: "0,", tok: "0"}, {in: "12}", tok: "12"}, {in: "1.5,", tok: "1.5"}, {in: "1000.000", tok: "1000.000"},
		{in: "0.25]", tok: "0.25"}, {in: "1.5e3,", tok: "1.5e3"}, {in: "2E-7", tok: "2E-7"}, {in: "-2.5", tok: "-2.5"},
		{in: "-0", tok: "-0"}, {in: "inf,", tok: "inf"}, {in: "-nan", tok: "-nan"}, {in: "1.5.2", tok: "1.5"}, {in: "12x", tok: "12"},
		{in: "01", bad: true}, {in: "00.5", bad: true}, {in: "1.", bad: true}, {in: "1.,", bad: true}, {in: "1.e5", bad: true},
		{in: "1e", bad: true}, {in: "-", bad: true}, {in: "-x", bad: true},
	} {
		var s Scanner
		s.Reset([]byte(tc.in))
		tok, err := s.NumberToken()
		switch {
		case tc.bad && err == nil:
			t.Errorf("%q: read %q, want an error", tc.in, tok)
		case !tc.bad && (err != nil || string(tok) != tc.tok || s.Pos() != len(tc.tok)):
			t.Errorf("%q: %q at %d (%v), want %q", tc.in, tok, s.Pos(), err, tc.tok)
		}
	}
}
