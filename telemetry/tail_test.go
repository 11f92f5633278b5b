package telemetry

import (
	"strings"
	"testing"
)

func TestStreamNotingTail(t *testing.T) {
	r1, r2 := record(1, 0), record(2, 1)
	// Enough lines that the tail is in a later block than the first.
	var many strings.Builder
	for i := range 4000 {
		many.WriteString(record(i, 0) + "\n")
	}
	tests := []struct {
		name   string
		input  string
		events int
		want   DroppedTail // Line 0: none reported
	}{
		{"complete lines", r1 + "\n" + r2 + "\n", 2, DroppedTail{}},
		{"last line complete without newline", r1 + "\n" + r2, 2, DroppedTail{}},
		{"truncated last line", r1 + "\n\n" + r2[:40], 1, DroppedTail{Line: 3, Bytes: 40}},
		{"truncated line alone", r1[:25], 0, DroppedTail{Line: 1, Bytes: 25}},
		{"truncated tail after many blocks", many.String() + r2[:30], 4000, DroppedTail{Line: 4001, Bytes: 30}},
		{"document without newline", "[" + r1 + "," + r2 + "]", 2, DroppedTail{}},
		{"pretty document", "[\n" + r1 + ",\n" + r2 + "\n]", 2, DroppedTail{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []DroppedTail
			events := 0
			err := StreamNotingTail(strings.NewReader(tc.input), func(c []Event) error {
				events += len(c)
				return nil
			}, func(d DroppedTail) { got = append(got, d) })
			if err != nil {
				t.Fatal(err)
			}
			if events != tc.events {
				t.Errorf("%d events, want %d", events, tc.events)
			}
			switch {
			case tc.want.Line == 0 && len(got) > 0:
				t.Errorf("reported %+v, want nothing", got)
			case tc.want.Line > 0 && (len(got) != 1 || got[0] != tc.want):
				t.Errorf("reported %+v, want %+v", got, tc.want)
			}
		})
	}
}
