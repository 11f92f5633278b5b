package jsonscan

import (
	"math"
	"strconv"
	"testing"
)

// shortDecimal gives exactly ParseFloat's double for the tokens it takes,
// and declines the rest.
func TestShortDecimalMatchesParseFloat(t *testing.T) {
	tokens := []string{"0", "-0", "0.0", "-0.0", "150.25", "0.1", "0.3", "1.5", "123456789012345", "1234567890.12345",
		"0.00000000000001", "-2.675", "900719925474.993", "1.", "5", "42.000"}
	for _, tok := range tokens {
		want, err := strconv.ParseFloat(tok, 64)
		got, ok := shortDecimal([]byte(tok))
		switch {
		case !ok:
			t.Errorf("%s: declined", tok)
		case err != nil || math.Float64bits(got) != math.Float64bits(want):
			t.Errorf("%s: %v (%x), ParseFloat %v (%x)", tok, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	for _, tok := range []string{"1e5", "1234567890123456", "0.000000000000001", "9007199254740.993", "0.1234567890123456", "nan", "-", "", ".", "1.2.3"} {
		if _, ok := shortDecimal([]byte(tok)); ok {
			t.Errorf("%s: taken", tok)
		}
	}
}

func FuzzShortDecimal(f *testing.F) {
	f.Add("150.25")
	f.Add("-0.1")
	f.Fuzz(func(t *testing.T, tok string) {
		got, ok := shortDecimal([]byte(tok))
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(tok, 64)
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: %v, ParseFloat %v %v", tok, got, want, err)
		}
	})
}
