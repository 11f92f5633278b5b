package ingest

// phaseNames is the set of configured phase span names (phase_span_names),
// asked about every span. Most span names are not in it: the prefilter
// turns those away before a map lookup hashes the name. A blank name is
// never in it (the processor's config refuses one, and a phase span
// without a name would have no path).
type phaseNames struct {
	maybe namePrefilter
	names map[string]struct{}
}

func newPhaseNames(names []string) phaseNames {
	s := phaseNames{names: make(map[string]struct{}, len(names))}
	for _, n := range names {
		if n == "" {
			continue
		}
		s.names[n] = struct{}{}
		s.maybe.add(n)
	}
	return s
}

func (s *phaseNames) empty() bool { return len(s.names) == 0 }

func (s *phaseNames) has(name string) bool {
	if !s.maybe.mayHold(name) {
		return false
	}
	_, ok := s.names[name]
	return ok
}
