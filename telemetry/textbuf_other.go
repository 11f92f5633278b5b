//go:build !unix

package telemetry

// textBuffer returns a zeroed buffer of n bytes on the heap (see the unix
// version).
func textBuffer(n int) ([]byte, func()) {
	return make([]byte, n), nil
}
