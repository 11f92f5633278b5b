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
