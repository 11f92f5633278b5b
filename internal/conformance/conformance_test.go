package conformance

import (
	"strings"
	"testing"
)

func TestCompareJSON(t *testing.T) {
	tests := []struct {
		name      string
		want, got string
		diff      string // "" when equal, else a substring of the difference
	}{
		{"equal docs", `[{"a":1,"b":"x","c":true,"d":null,"e":[0.5,2]}]`, `[ {"e":[0.5, 2], "d":null, "c":true, "b":"x", "a":1} ]`, ""},
		{"missing key", `{"a":1,"b":null}`, `{"a":1}`, "$.b: missing key"},
		{"extra key", `{"a":1}`, `{"a":1,"b":null}`, "$.b: unexpected key"},
		{"integer vs float", `{"a":1}`, `{"a":1.0}`, "integer vs float"},
		{"float vs integer", `{"a":1.0}`, `{"a":1}`, "integer vs float"},
		{"integer differs", `{"a":12345678901234567890}`, `{"a":12345678901234567891}`, "$.a: want"},
		{"float within 1e-9", `{"a":0.1}`, `{"a":0.1000000005}`, ""},
		{"float exponent within 1e-9", `{"a":1e-3}`, `{"a":0.001}`, ""},
		{"float outside 1e-9", `{"a":0.1}`, `{"a":0.100000002}`, "$.a: want 0.1"},
		{"array length", `{"a":[1,2]}`, `{"a":[1,2,3]}`, "$.a: want 2 elements, got 3"},
		{"empty array vs null", `[]`, `null`, "want array"},
		{"string differs", `{"a":"x"}`, `{"a":"y"}`, "$.a: want x"},
		{"bool differs", `[true]`, `[false]`, "$[0]: want true"},
		{"null vs zero", `{"a":null}`, `{"a":0}`, "$.a: want <nil>"},
		{"nested path", `{"a":[{"b":1}]}`, `{"a":[{"b":2}]}`, "$.a[0].b"},
		{"output not JSON", `[]`, `[`, "output is not JSON"},
		{"trailing data", `[]`, `[] []`, "output is not JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := CompareJSON([]byte(tc.want), []byte(tc.got))
			if tc.diff == "" {
				if d != "" {
					t.Fatalf("want equal, got %q", d)
				}
				return
			}
			if !strings.Contains(d, tc.diff) {
				t.Fatalf("difference %q does not contain %q", d, tc.diff)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	cases, err := Load("attribution")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no attribution cases")
	}
	for i, c := range cases {
		if c.Set != "attribution" || c.Dir == "" {
			t.Fatalf("case %d: set %q dir %q", i, c.Set, c.Dir)
		}
		if i > 0 && cases[i-1].Dir >= c.Dir {
			t.Fatalf("cases not sorted: %s before %s", cases[i-1].Dir, c.Dir)
		}
	}
	if _, err := Load("no-such-set"); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("missing set: %v", err)
	}
}
