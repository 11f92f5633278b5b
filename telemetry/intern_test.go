package telemetry

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// Interned strings equal their text whether found in the front table, in
// the map behind it, or in neither (the map full): with far more distinct
// strings than the front table has slots, of every length up to and past
// a slot's text, in several rounds so that slots are overwritten by
// strings that collide. A string the map holds is returned as the map's.
func TestInternFrontTable(t *testing.T) {
	var texts []string
	for i := range 3 * internFrontSlots {
		texts = append(texts, fmt.Sprintf("rank-%d", i))
	}
	for n := range 66 {
		texts = append(texts, strings.Repeat("h", n))
	}
	s := &scanner{intern: newInternTables()}
	for round := range 3 {
		for _, text := range texts {
			b := []byte(text)
			got := s.internBytes(b)
			clear(b) // the string must not alias the record's bytes
			if got != text {
				t.Fatalf("round %d: internBytes(%q) = %q", round, text, got)
			}
			if v, ok := s.intern.strings[text]; ok && text != "" && unsafe.StringData(got) != unsafe.StringData(v) {
				t.Fatalf("round %d: %q is not the string interned before", round, text)
			}
		}
	}
	if s.intern.front == nil {
		t.Fatal("the front table was not made")
	}
	if len(s.intern.strings) != maxInterned {
		t.Fatalf("the map holds %d strings, want its bound %d", len(s.intern.strings), maxInterned)
	}
}
