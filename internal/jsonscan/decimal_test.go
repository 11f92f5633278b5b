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
		"0.00000000000001", "-2.675", "900719925474.993", "5", "42.000"}
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
	for _, tok := range []string{"1e5", "1234567890123456", "0.000000000000001", "9007199254740.993", "0.1234567890123456", "nan", "-", "", ".", "1.2.3",
		"1.", "00.5"} { // not JSON: NumberToken never gives them, ParseFloat reads them alike
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

// plainDecimal reads exactly a JSON number token that is a plain decimal,
// with ParseFloat's double, and declines everything else: signs, exponents,
// leading zeros, more than 15 digits.
func TestPlainDecimal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		read int
	}{
		{"150.25, ", 6}, {"0.5}", 3}, {"0", 1}, {"7]", 1}, {"123456789012345", 15}, {"42.000", 6},
		{"1234567890123456", 0}, {"-1.5", 0}, {"1e5", 0}, {"1.5e3", 0}, {"01", 0}, {"00.5", 0},
		{"1.", 0}, {"1.2.3", 0}, {".5", 0}, {"", 0}, {"nan", 0},
	} {
		v, n := plainDecimal([]byte(tc.in))
		if n != tc.read {
			t.Errorf("%q: read %d bytes, want %d", tc.in, n, tc.read)
			continue
		}
		if n == 0 {
			continue
		}
		want, err := strconv.ParseFloat(tc.in[:n], 64)
		if err != nil || math.Float64bits(v) != math.Float64bits(want) {
			t.Errorf("%q: %v, ParseFloat %v %v", tc.in, v, want, err)
		}
	}
}

// FloatField gives the same double and leaves the scanner at the same byte
// with and without plainDecimal.
func FuzzFloatField(f *testing.F) {
	for _, seed := range []string{"150.25,", "0.1]", "-2.5}", "1e3,", "01,", "1.,", "12345678901234567.5 ", "nan,"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var fast Scanner
		fast.Reset([]byte(in))
		got, gerr := fast.FloatField("x")
		v, n := plainDecimal([]byte(in))
		if n == 0 {
			return
		}
		if gerr != nil || math.Float64bits(got) != math.Float64bits(v) || fast.Pos() != n {
			t.Fatalf("%q: FloatField %v at %d (%v), plainDecimal %v at %d", in, got, fast.Pos(), gerr, v, n)
		}
		var slow Scanner
		slow.Reset([]byte(in))
		tok, err := slow.NumberToken()
		want, perr := strconv.ParseFloat(string(tok), 64)
		if err != nil || perr != nil || slow.Pos() != n || math.Float64bits(want) != math.Float64bits(v) {
			t.Fatalf("%q: the general path reads %q (%v %v) = %v", in, tok, err, perr, want)
		}
	})
}
