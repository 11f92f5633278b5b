package window

// prefetch asks the processor to load the cache line holding addr. It never
// faults, whatever addr is, and changes nothing the program can observe.
//
//go:noescape
func prefetch(addr uintptr)
