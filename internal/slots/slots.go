// Package slots is the slot array of an open-addressing hash table rebuilt
// for each use: the span index of one request (ingest) and the index of a
// rank's phase spans at evaluation (the processor). A Go map there cost
// more than the work it served: it hashed every key of a batch and
// allocated as it grew, where these tables keep their memory and leave key
// comparison to the caller, who knows which bytes to compare first.
package slots // import "github.com/collectiveattr/collectiveattr/internal/slots"

import "math/bits"

// Table maps hashes to entry indexes. S holds 1 + an entry index, 0 when
// empty; its length is a power of two at least twice the entries, so
// linear probing from Home always ends at an empty slot.
type Table struct {
	S     []int32
	shift uint8
}

// Reset empties the table for n entries, keeping its memory when that is
// large enough.
func (t *Table) Reset(n int) {
	size := 8
	for size < 2*n {
		size *= 2
	}
	if cap(t.S) >= size {
		t.S = t.S[:size]
		clear(t.S)
	} else {
		t.S = make([]int32, size)
	}
	t.shift = uint8(64 - bits.TrailingZeros(uint(size)))
}

// Home is the first slot to probe for hash h: the top bits of h times the
// golden ratio, which spread keys that differ only in a few bits (span ids
// made by a counter) as well as random ones.
func (t *Table) Home(h uint64) int { return int(h * 0x9E3779B97F4A7C15 >> t.shift) }

// Next is the slot probed after slot i.
func (t *Table) Next(i int) int { return (i + 1) & (len(t.S) - 1) }
