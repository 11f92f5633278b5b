package ingest

import (
	"strconv"
	"testing"
)

// parseDecimal takes exactly the optionally signed decimal integers that
// fit in an int64, with ParseInt's value.
func TestParseDecimalMatchesParseInt(t *testing.T) {
	for _, s := range []string{"0", "7", "-3", "+12", "007", "123456789012345678", "-123456789012345678",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "99999999999999999999",
		"", "-", "+", "1.5", "1e3", " 1", "GPU-8f3a", "0x10", "--1"} {
		checkParseDecimal(t, s)
	}
}

func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"42", "-7", "+0", "9223372036854775808", "1a"} {
		f.Add(s)
	}
	f.Fuzz(checkParseDecimal)
}

func checkParseDecimal(t *testing.T, s string) {
	got, ok := parseDecimal(s)
	want, err := strconv.ParseInt(s, 10, 64)
	if ok != (err == nil) || (ok && got != want) {
		t.Errorf("parseDecimal(%q) = %d, %v; ParseInt %d, %v", s, got, ok, want, err)
	}
}
