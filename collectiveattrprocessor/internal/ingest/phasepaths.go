package ingest

import "slices"

// phasePaths hands out phase paths as shared slices of interned names.
// Phase spans repeat a few paths (a training step's forward, backward and
// optimizer) batch after batch, and a Record's path is kept for the whole
// window: one slice per distinct path, instead of one allocation and an
// intern lookup per name per span. A colliding path replaces the entry.
// The slices are shared by every Record with that path, so no holder may
// modify one (the processor and the phase package only read paths).
type phasePaths struct {
	e [256][]string
}

// sharedPath returns the path made of parts (non-empty names read from a
// request), nil when there are none.
func (c *tracesConverter) sharedPath(parts []string) []string {
	if len(parts) == 0 {
		return nil
	}
	h := uint(len(parts))
	for _, p := range parts {
		h = h*31 + uint(len(p))*157 + uint(p[0])*7 + uint(p[len(p)-1])
	}
	e := &c.paths.e[h&uint(len(c.paths.e)-1)]
	if slices.Equal(*e, parts) {
		return *e
	}
	path := make([]string, len(parts))
	for i, p := range parts {
		path[i] = c.ids.names.intern(p)
	}
	*e = path
	return path
}
