// Package readall reads a whole stream into one buffer sized from the length
// the stream declares.
//
// io.ReadAll starts small and grows by copying, so a 140 KB body costs about
// twice its size in zeroed allocations and as many bytes copied; a gateway
// reads two such bodies a request. Read allocates once when the declared
// length is right, and grows as io.ReadAll does when it is wrong, unknown or
// larger than MaxUpfront.
//
// Security properties: the declared length only sizes the first buffer, and
// never beyond MaxUpfront, so a peer that declares a large body and sends
// little holds at most that much memory; what is read is bounded by the
// caller's own limiting reader, which a false length does not change.
package readall

import "io"

// MaxUpfront is the largest buffer Read allocates before the bytes arrive.
const MaxUpfront = 4 << 20

// minBuffer is the first buffer's size when no length is declared.
const minBuffer = 512

// Read reads r until EOF or an error and returns what it read; EOF is not an
// error. declared is the length the stream announced, negative when it
// announced none (http.Request.ContentLength, http.Response.ContentLength).
func Read(r io.Reader, declared int64) ([]byte, error) {
	n := minBuffer
	if declared >= 0 {
		// One byte more than declared, so that the read that finds EOF
		// needs no larger buffer.
		n = int(min(declared, MaxUpfront)) + 1
	}
	b := make([]byte, 0, n)
	for {
		m, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}
