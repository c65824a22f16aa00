//go:build linux

package bigbuf

import "golang.org/x/sys/unix"

func mapBuffer(n int) ([]byte, bool) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, false
	}
	// Both are advice: without them the pages are faulted in as they are
	// first written.
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	_ = unix.Madvise(b, unix.MADV_POPULATE_WRITE)
	return b, true
}

func unmapBuffer(b []byte) { _ = unix.Munmap(b) }
