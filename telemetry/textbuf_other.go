//go:build !linux

package telemetry

// textBuffer returns a zeroed buffer of n bytes on the heap (see the Linux
// version).
func textBuffer(n int) ([]byte, func()) {
	return make([]byte, n), nil
}
