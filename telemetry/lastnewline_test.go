package telemetry

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// lastNewline finds what bytes.LastIndexByte finds: no newline, one at
// either end, one just inside or outside each width it searches, lines
// short and longer than those widths.
func TestLastNewline(t *testing.T) {
	var inputs [][]byte
	for _, n := range []int{0, 1, 2, 4095, 4096, 4097, 16383, 16384, 16385, 70000} {
		inputs = append(inputs, bytes.Repeat([]byte{'x'}, n))
		for _, at := range []int{0, 1, n - 4097, n - 4096, n - 4095, n - 16385, n - 16384, n - 2, n - 1} {
			if at >= 0 && at < n {
				b := bytes.Repeat([]byte{'x'}, n)
				b[at] = '\n'
				inputs = append(inputs, b)
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		b := make([]byte, rng.IntN(40000))
		for i := range b {
			b[i] = 'a'
			if rng.IntN(1+rng.IntN(20000)) == 0 {
				b[i] = '\n'
			}
		}
		inputs = append(inputs, b)
	}
	for _, b := range inputs {
		if got, want := lastNewline(b), bytes.LastIndexByte(b, '\n'); got != want {
			t.Fatalf("len %d: lastNewline %d, want %d", len(b), got, want)
		}
	}
}
