package ingest

import "strings"

// interner returns one long-lived copy per distinct string, so that job ids
// and host names kept in Records and join state neither allocate per item nor
// pin the memory of the request they were read from.
type interner struct {
	m   map[string]string
	max int
	// last is the previous result: items of one batch mostly repeat the job
	// id and host of the item before them.
	last string
}

func newInterner(maxEntries int) *interner {
	return &interner{m: make(map[string]string), max: maxEntries}
}

func (in *interner) intern(s string) string {
	if s == "" {
		return ""
	}
	if s == in.last {
		return in.last
	}
	if v, ok := in.m[s]; ok {
		in.last = v
		return v
	}
	if len(in.m) >= in.max {
		// Garbage identities must not grow the table without bound; strings
		// still referenced elsewhere stay valid, they are just not shared.
		clear(in.m)
	}
	v := strings.Clone(s)
	in.m[v] = v
	in.last = v
	return v
}

// internBytes is intern of a string built in b: one that is interned
// already costs no copy.
func (in *interner) internBytes(b []byte) string {
	if v, ok := in.m[string(b)]; ok {
		in.last = v
		return v
	}
	return in.intern(string(b))
}
