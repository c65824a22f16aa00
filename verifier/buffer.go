package verifier

import "github.com/privacycut/privacycut/internal/bigbuf"

// newBuffer returns a zeroed buffer of n bytes and the function that frees
// it; nothing may use the buffer after that. A large buffer is mapped apart
// from the Go heap and populated at once (bigbuf): the plugin is a fresh
// process, which would otherwise take a page fault per 4 KiB it writes.
func newBuffer(n int) ([]byte, func()) { return bigbuf.New(n) }
