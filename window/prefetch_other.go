//go:build !amd64

package window

// prefetch does nothing on this architecture.
func prefetch(addr uintptr) {}
