//go:build !linux

package verifier

// newBuffer returns a zeroed buffer of n bytes and the function that frees
// it; nothing may use the buffer after that.
func newBuffer(n int) ([]byte, func()) { return make([]byte, n), func() {} }
