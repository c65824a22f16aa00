//go:build linux

package verifier

import "golang.org/x/sys/unix"

// mapThreshold is the size from which newBuffer maps memory apart from the
// Go heap.
const mapThreshold = 64 << 10

// newBuffer returns a zeroed buffer of n bytes and the function that frees
// it; nothing may use the buffer after that.
//
// A large buffer is mapped apart from the Go heap, advised to use huge
// pages and populated at once: a fresh process, such as the plugin, would
// otherwise take one page fault per 4 KiB the first time it writes each
// page, and on virtual machines a fault is expensive. If mapping fails, the
// buffer comes from the Go heap.
func newBuffer(n int) ([]byte, func()) {
	if n < mapThreshold {
		return make([]byte, n), func() {}
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return make([]byte, n), func() {}
	}
	// Both are advice: without them the pages are faulted in as they are
	// first written.
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	_ = unix.Madvise(b, unix.MADV_POPULATE_WRITE)
	return b, func() { _ = unix.Munmap(b) }
}
