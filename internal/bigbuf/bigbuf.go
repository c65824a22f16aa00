// Package bigbuf hands out large byte buffers that live apart from the Go
// heap and are freed explicitly.
//
// Why: a one-shot command such as `cut prepare`, or the verifier plugin,
// starts with an empty heap, and every 4 KiB it first writes costs a page
// fault (10–16 µs on the virtual machines measured in docs/PERFORMANCE.md).
// A mapped buffer is advised to use transparent huge pages and populated in
// one call, so 64 MiB costs a few dozen faults instead of sixteen thousand.
//
// Security properties: a freed buffer is unmapped, so its pages go back to
// the kernel, which zeroes them before anyone reuses them; nothing of it is
// left in the Go heap to be handed out again. Free is idempotent. Using a
// buffer after it is freed faults (the process dies); the owner frees only
// when every reader is done. Where mapping is not available or fails, New
// falls back to the Go heap and free does nothing.
package bigbuf

import (
	"sync"
	"sync/atomic"
)

// Threshold is the size from which New maps memory; smaller buffers come
// from the Go heap.
const Threshold = 64 << 10

// live counts the mapped buffers not yet freed.
var live atomic.Int64

// Live returns the number of mapped buffers not yet freed: tests use it to
// check that an operation frees what it mapped.
func Live() int64 { return live.Load() }

// New returns a zeroed buffer of n bytes and the function that frees it;
// nothing may use the buffer after that. The function may be called more
// than once.
func New(n int) ([]byte, func()) {
	if n < Threshold {
		return make([]byte, n), func() {}
	}
	b, ok := mapBuffer(n)
	if !ok {
		return make([]byte, n), func() {}
	}
	live.Add(1)
	var once sync.Once
	return b, func() {
		once.Do(func() {
			unmapBuffer(b)
			live.Add(-1)
		})
	}
}
