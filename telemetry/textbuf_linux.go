package telemetry

import "syscall"

// textBuffer returns a zeroed buffer of n bytes and, when it is outside the
// Go heap, the function that frees it. A document read whole is by far the
// largest allocation of a read and holds no pointers: on the heap it would
// raise the collector's goal by its size, letting as much garbage pile up
// before each collection. The pages are populated by the mapping call:
// faulting them in one by one as the text is copied costs more. Small
// buffers stay on the heap.
func textBuffer(n int) ([]byte, func()) {
	if n < 16<<20 {
		return make([]byte, n), nil
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
	if err != nil {
		return make([]byte, n), nil
	}
	return b, func() { _ = syscall.Munmap(b) }
}
