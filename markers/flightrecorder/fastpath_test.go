package flightrecorder

import "testing"

// The one-pass readers take the recorder's own layout and decline
// anything else, which the Scanner's element loops then read.
func TestOneTensor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int64
		used int
	}{
		{"[[4096, 4096]], ", 16777216, 14},
		{"[[0]]", 0, 5},
		{"[[2,3]]", 6, 7},
		{"[[3037000500, 3037000500]]", 0, 26}, // overflows: unknown
		{"[[]]", 0, 0},
		{"[[-1]]", 0, 0},
		{"[[1.5]]", 0, 0},
		{"[[01]]", 0, 0},
		{"[[1], [2]]", 0, 0},
		{"[[1,  2]]", 0, 0},
		{"[[1, 2]", 0, 0},
		{"[ [1]]", 0, 0},
	} {
		n, used := oneTensor([]byte(tc.in))
		if n != tc.n || used != tc.used {
			t.Errorf("%s: %d, %d bytes; want %d, %d bytes", tc.in, n, used, tc.n, tc.used)
		}
	}
}

func TestStringList(t *testing.T) {
	for _, tc := range []struct {
		in, first, nonEmpty string
		used                int
	}{
		{`["0", "default_pg"], `, "0", "0", 19},
		{`["", "Float"]`, "", "Float", 13},
		{`["Float"]`, "Float", "Float", 9},
		{`["a","b"]`, "a", "a", 9},
		{`[]`, "", "", 0},
		{`["a\u0041"]`, "", "", 0},
		{`["a", 1]`, "", "", 0},
		{`["a"`, "", "", 0},
		{`[ "a"]`, "", "", 0},
	} {
		first, nonEmpty, used := stringList([]byte(tc.in))
		if string(first) != tc.first || string(nonEmpty) != tc.nonEmpty || used != tc.used {
			t.Errorf("%s: %q, %q, %d bytes; want %q, %q, %d", tc.in, first, nonEmpty, used, tc.first, tc.nonEmpty, tc.used)
		}
	}
}
