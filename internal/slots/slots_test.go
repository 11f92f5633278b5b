package slots

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestResetSizesAndClears(t *testing.T) {
	var tb Table
	for _, tc := range []struct{ n, size int }{{0, 8}, {4, 8}, {5, 16}, {1000, 2048}, {1024, 2048}, {1025, 4096}} {
		tb.Reset(tc.n)
		assert.Len(t, tb.S, tc.size, "n=%d", tc.n)
		for i := range 1 << 12 {
			h := tb.Home(uint64(i) << 40)
			assert.True(t, h >= 0 && h < len(tb.S), "home %d of %d slots", h, len(tb.S))
		}
	}
	tb.Reset(1000)
	big := &tb.S[0]
	tb.S[7] = 3
	tb.Reset(10)
	assert.Same(t, big, &tb.S[0], "a smaller table keeps the memory")
	tb.Reset(1000)
	assert.Zero(t, tb.S[7], "and is cleared")
	assert.Equal(t, 0, tb.Next(len(tb.S)-1), "probing wraps")
	assert.Equal(t, 5, tb.Next(4))
}

// TestHomeSpreadsCounters: ids that differ only in their low bits, as a
// counter makes them, land in distinct slots.
func TestHomeSpreadsCounters(t *testing.T) {
	var tb Table
	tb.Reset(512)
	seen := map[int]bool{}
	for i := range uint64(512) {
		seen[tb.Home(i)] = true
	}
	assert.Greater(t, len(seen), 500)
}
