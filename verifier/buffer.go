package verifier

import (
	"sync/atomic"

	"github.com/privacycut/privacycut/internal/bigbuf"
)

// mapFrom is the size from which newBuffer maps a buffer apart from the Go
// heap once the process is warm (see warm).
const mapFrom = 1 << 20

// warm is set when a verification ends in this process. Before that the
// heap is empty and every 4 KiB it first hands out costs a page fault, so
// the buffers of bigbuf.Threshold bytes or more are mapped and populated at
// once: the first verification of a fresh plugin or `cut prepare`. After
// it, the heap gives back pages already faulted in, where a mapping costs a
// populate and an unmap (a TLB shootdown) every time: a warm plugin's
// buffers below mapFrom come from the heap.
var warm atomic.Bool

// newBuffer returns a zeroed buffer of n bytes and the function that frees
// it; nothing may use the buffer after that.
func newBuffer(n int) ([]byte, func()) {
	if n < mapFrom && warm.Load() {
		return make([]byte, n), func() {}
	}
	return bigbuf.New(n)
}
