package main

// rankSet is the set of ranks a job's records name. Ranks are small and
// dense (0 to world size - 1) and a record of another rank than the
// previous one is the common case, so they are bits indexed by rank: a
// map's entries, hashed and scattered, cost a cache miss per record once
// a job has thousands of ranks. A negative or far larger rank, which
// would make the bits sparse, is kept in a map.
type rankSet struct {
	bits   []uint64
	dense  int // ranks in bits
	sparse map[int64]struct{}
}

// add puts rank r in the set.
func (s *rankSet) add(r int64) {
	if r >= 0 && r < int64(len(s.bits))*64 {
		s.setBit(r)
		return
	}
	// The bits grow to hold r only while they stay dense: r below
	// twice the ranks held, plus some.
	if r < 0 || r >= 2*int64(s.len())+4096 {
		if s.sparse == nil {
			s.sparse = map[int64]struct{}{}
		}
		s.sparse[r] = struct{}{}
		return
	}
	s.bits = append(s.bits, make([]uint64, int(r/64)+1-len(s.bits))...)
	// The ranks the map held below the new length move to the bits.
	for q := range s.sparse {
		if q >= 0 && q < int64(len(s.bits))*64 {
			delete(s.sparse, q)
			s.setBit(q)
		}
	}
	s.setBit(r)
}

func (s *rankSet) setBit(r int64) {
	w, b := &s.bits[r/64], uint64(1)<<(r%64)
	if *w&b == 0 {
		*w |= b
		s.dense++
	}
}

// len is the number of ranks in the set.
func (s *rankSet) len() int { return s.dense + len(s.sparse) }
