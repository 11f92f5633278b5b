package telemetry

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestNumberMatchesStrconv checks the scanner's integers, read eight digits
// at a time where it can, against strconv for every length up to and past
// int64's, digit patterns that stress the word arithmetic, and a lexeme
// followed by other bytes.
func TestNumberMatchesStrconv(t *testing.T) {
	lexemes := []string{"0", "-0", "9", "10", "99999999", "100000000", "12345678", "123456789",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
		"18446744073709551616", "99999999999999999999", "1767225599991956219", "85520809984"}
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 21; n++ {
		for range 50 {
			var b strings.Builder
			b.WriteByte(byte('1' + r.IntN(9)))
			for range n - 1 {
				b.WriteByte(byte('0' + r.IntN(10)))
			}
			lexemes = append(lexemes, b.String(), "-"+b.String())
		}
	}
	for _, lex := range lexemes {
		// Bytes that end the lexeme; ':' and '/' are next to the digits.
		for _, tail := range []string{"", ",", "}", ":", "a", "/", " 1"} {
			s := &scanner{data: []byte(lex + tail)}
			got, kind, v, err := s.number()
			want, perr := strconv.ParseInt(lex, 10, 64)
			if err != nil || string(got) != lex {
				t.Fatalf("%q: lexeme %q, err %v", lex+tail, got, err)
			}
			switch {
			case perr != nil && kind != numBigInt:
				t.Fatalf("%q: kind %v, want big", lex, kind)
			case perr == nil && (kind != numInt || v != want):
				t.Fatalf("%q: kind %v value %d, want %d", lex, kind, v, want)
			}
		}
	}
}
