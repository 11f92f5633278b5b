package attribution

import (
	"math"
	"math/big"
	"strconv"
)

// pyRound is Python's round(x, n) for a float: the exact binary value rounded
// to n decimals, ties to even (round(2.675, 2) == 2.67 because 2.675 is
// stored as 2.67499999…). strconv formats the exact value correctly rounded,
// so format-then-parse reproduces it; math.Round(x*10^n)/10^n would not.
func pyRound(x float64, n int) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	var buf [400]byte // enough for any float64 in 'f' format with n <= 6
	b := strconv.AppendFloat(buf[:0], x, 'f', n, 64)
	// The conversion does not allocate: ParseFloat does not keep its
	// argument, so the compiler puts a short string on the stack.
	v, _ := strconv.ParseFloat(string(b), 64)
	return v
}

// roundMemo is pyRound(·, n) that remembers its last argument: a rank's
// spikes often share their z-score and confidence, and the format-then-
// parse round trip is most of what a spike's result costs otherwise.
type roundMemo struct {
	n    int
	bits uint64
	v    float64
	set  bool
}

func (m *roundMemo) round(x float64) float64 {
	if b := math.Float64bits(x); !m.set || b != m.bits {
		m.bits, m.v, m.set = b, pyRound(x, m.n), true
	}
	return m.v
}

// pyDiv is Python's int / int: the correctly rounded quotient of the exact
// integers. Below 2^53 both convert exactly, so one float division is
// already correctly rounded; above, the quotient is computed exactly.
func pyDiv(a, b int64) float64 {
	const exact = 1 << 53
	if a >= -exact && a <= exact && b >= -exact && b <= exact {
		return float64(a) / float64(b)
	}
	q, _ := new(big.Rat).SetFrac(big.NewInt(a), big.NewInt(b)).Float64()
	return q
}

// AppendFloat appends x the way Python's json.dumps writes a float (its
// repr): the shortest digits that round-trip, "1.0" rather than "1",
// exponent notation below 1e-4 or from 1e16 up ("1e-05", "1e+16").
func AppendFloat(dst []byte, x float64) []byte {
	switch {
	case math.IsNaN(x):
		return append(dst, "NaN"...)
	case math.IsInf(x, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(x, -1):
		return append(dst, "-Infinity"...)
	case x == 0:
		if math.Signbit(x) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	var tmp [32]byte
	s := strconv.AppendFloat(tmp[:0], x, 'e', -1, 64) // [-]d[.ddd]e±XX
	neg := s[0] == '-'
	if neg {
		s = s[1:]
		dst = append(dst, '-')
	}
	ePos := 0
	for i, c := range s {
		if c == 'e' {
			ePos = i
			break
		}
	}
	mant, expPart := s[:ePos], s[ePos+1:]
	exp, _ := strconv.Atoi(string(expPart))
	var digits [20]byte
	nd := 0
	for _, c := range mant {
		if c != '.' {
			digits[nd] = c
			nd++
		}
	}
	d := digits[:nd]
	if exp < -4 || exp >= 16 {
		dst = append(dst, d[0])
		if nd > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if exp < 0 {
			dst = append(dst, '-')
			exp = -exp
		} else {
			dst = append(dst, '+')
		}
		if exp < 10 {
			dst = append(dst, '0')
		}
		return strconv.AppendInt(dst, int64(exp), 10)
	}
	if exp < 0 {
		dst = append(dst, '0', '.')
		for i := 0; i < -exp-1; i++ {
			dst = append(dst, '0')
		}
		return append(dst, d...)
	}
	intLen := exp + 1
	if nd <= intLen {
		dst = append(dst, d...)
		for i := nd; i < intLen; i++ {
			dst = append(dst, '0')
		}
		return append(dst, '.', '0')
	}
	dst = append(dst, d[:intLen]...)
	dst = append(dst, '.')
	return append(dst, d[intLen:]...)
}
