package ingest

// phaseNames is the set of configured phase span names (phase_span_names),
// asked about every span. Most span names are not in it: a bit per (length,
// first byte) turns those away before a map lookup hashes the name. A blank
// name is never in it (the processor's config refuses one, and a phase span
// without a name would have no path).
type phaseNames struct {
	maybe [64][4]uint64
	names map[string]struct{}
}

func newPhaseNames(names []string) phaseNames {
	s := phaseNames{names: make(map[string]struct{}, len(names))}
	for _, n := range names {
		if n == "" {
			continue
		}
		s.names[n] = struct{}{}
		s.maybe[len(n)&63][n[0]>>6] |= 1 << (n[0] & 63)
	}
	return s
}

func (s *phaseNames) empty() bool { return len(s.names) == 0 }

func (s *phaseNames) has(name string) bool {
	if name == "" || s.maybe[len(name)&63][name[0]>>6]&(1<<(name[0]&63)) == 0 {
		return false
	}
	_, ok := s.names[name]
	return ok
}
