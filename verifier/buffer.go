package verifier

import "github.com/privacycut/privacycut/internal/bigbuf"

// mapFrom is the size from which newBuffer maps a buffer apart from the Go
// heap. Below it the heap is cheaper: a warm plugin verifies request after
// request, and the heap gives it back pages already faulted in, where a
// mapping costs a populate and an unmap (a TLB shootdown) every time. A
// report of a few hundred findings stays below it; a cut of megabytes, for
// which a fresh process's page faults would dominate, is mapped.
const mapFrom = 1 << 20

// newBuffer returns a zeroed buffer of n bytes and the function that frees
// it; nothing may use the buffer after that. A buffer of mapFrom bytes or
// more is mapped apart from the Go heap and populated at once (bigbuf): the
// plugin is often a fresh process, which would otherwise take a page fault
// per 4 KiB it writes.
func newBuffer(n int) ([]byte, func()) {
	if n < mapFrom {
		return make([]byte, n), func() {}
	}
	return bigbuf.New(n)
}
