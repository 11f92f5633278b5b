package jsonscan

import (
	"strconv"
	"testing"
)

// ShortInt takes exactly the integers of at most 19 digits that ParseInt
// reads within int64 (no leading zero), stops where the number ends, and
// declines the rest without consuming anything.
func TestShortIntMatchesParseInt(t *testing.T) {
	taken := []string{"0", "-0", "7", "-7", "12345678", "123456789", "1234567812345678", "12345678123456789",
		"1767225600000000000", "9223372036854775807", "-9223372036854775808", "99999999", "100000000"}
	for _, tok := range taken {
		for _, tail := range []string{"", ",", ", \"x\": 1}", "]", " "} {
			s := Scanner{data: []byte(tok + tail)}
			got, ok := s.ShortInt()
			want, err := strconv.ParseInt(tok, 10, 64)
			switch {
			case !ok:
				t.Errorf("%q: declined", tok+tail)
			case err != nil || got != want:
				t.Errorf("%q: %d, ParseInt %d %v", tok+tail, got, want, err)
			case s.pos != len(tok):
				t.Errorf("%q: stopped at %d, want %d", tok+tail, s.pos, len(tok))
			}
		}
	}
	declined := []string{"", "-", "01", "0123456789012345", "9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "12345678901234567890", "123456789012345678901234", "1.5", "12345678.5",
		"1767225600000000000e3", "x", "-x"}
	for _, tok := range declined {
		s := Scanner{data: []byte(tok)}
		if v, ok := s.ShortInt(); ok || s.pos != 0 {
			t.Errorf("%q: taken as %d", tok, v)
		}
	}
	// A non-digit inside the first eight bytes ends the number there.
	for tok, want := range map[string]int64{"1234567:12345678": 1234567, "12345678/": 12345678, "123456781234567?1": 123456781234567} {
		s := Scanner{data: []byte(tok)}
		if v, ok := s.ShortInt(); !ok || v != want {
			t.Errorf("%q: %d %v, want %d", tok, v, ok, want)
		}
	}
}

func FuzzShortInt(f *testing.F) {
	f.Add("1767225600000000000, ")
	f.Add("-9223372036854775808]")
	f.Add("12345678:")
	f.Fuzz(func(t *testing.T, text string) {
		s := Scanner{data: []byte(text)}
		got, ok := s.ShortInt()
		if !ok {
			if s.pos != 0 {
				t.Fatalf("%q: declined after consuming %d bytes", text, s.pos)
			}
			return
		}
		tok := text[:s.pos]
		want, err := strconv.ParseInt(tok, 10, 64)
		if err != nil || got != want || (len(tok) > 1 && tok[0] == '0') || (len(tok) > 2 && tok[:2] == "-0") {
			t.Fatalf("%q: %d from %q, ParseInt %d %v", text, got, tok, want, err)
		}
		if rest := text[s.pos:]; rest != "" && (IsDigit(rest[0]) || rest[0] == '.' || rest[0] == 'e' || rest[0] == 'E') {
			t.Fatalf("%q: stopped inside the number at %d", text, s.pos)
		}
	})
}
