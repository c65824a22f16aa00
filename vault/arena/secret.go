package arena

import (
	"crypto/subtle"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// redacted is what a secret prints as, everywhere.
const redacted = "REDACTED"

// Secret is a handle on bytes in an arena: the arena, an offset and a length.
// It holds no secret bytes itself, so copying its fields leaks nothing, and it
// redacts itself in every formatter, logger and encoder. The bytes are read
// only through Reveal and written only through Fill. Use it by pointer; a
// Secret must not be copied after first use.
type Secret struct {
	mu    sync.RWMutex // Reveal and Equal hold it shared; Fill and Wipe exclusively
	a     *Arena
	off   int         // byte offset of the first slot
	n     int         // length in bytes
	span  int         // bytes of the slots it occupies
	wiped atomic.Bool // set under mu held exclusively; read without it by Len
}

// Len reports the secret's length in bytes, 0 once wiped. It takes no lock,
// so it may be called from inside the secret's own callbacks.
func (s *Secret) Len() int {
	if s == nil || s.wiped.Load() {
		return 0
	}
	return s.n
}

// Slot reports the byte offset and length of the slots the secret occupies
// (or occupied, once wiped): a position, for Arena.IsZero in tests.
func (s *Secret) Slot() (off, n int) {
	if s == nil {
		return 0, 0
	}
	return s.off, s.span
}

// access pins the arena and returns the secret's bytes. The caller holds s.mu
// and must call s.a.releaseAccess when done.
func (s *Secret) access(op string) ([]byte, error) {
	if s == nil || s.a == nil {
		return nil, newError(op, -1, -1, ErrInvalid, nil)
	}
	if s.wiped.Load() {
		return nil, newError(op, s.off, s.n, ErrWiped, nil)
	}
	r, err := s.a.acquire()
	if err != nil {
		return nil, newError(op, s.off, s.n, err, nil)
	}
	return r.bytes(s.off, s.n), nil
}

// Fill calls fn with the secret's bytes to write them in place. The slice has
// exactly Len bytes of length and capacity, so appending to it reallocates
// into ordinary memory: fn must write with copy or indexing only, from a
// source that is not itself a lingering heap copy, and must not retain the
// slice. If fn returns an error the secret is zeroed and the error is returned
// unchanged (it is the caller's own error).
func (s *Secret) Fill(fn func(dst []byte) error) error {
	if s == nil {
		return newError("fill", -1, -1, ErrInvalid, nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.access("fill")
	if err != nil {
		return err
	}
	defer s.a.releaseAccess()
	if err := fn(b); err != nil {
		clear(b)
		runtime.KeepAlive(b)
		return err
	}
	return nil
}

// Reveal calls fn with the secret's bytes. It is the only read access. fn
// must not retain the slice, copy it to ordinary memory, convert it to a
// string, or call methods of the same secret other than Len and Slot (Fill
// and Wipe deadlock; nested Reveal or Equal can deadlock behind a waiting
// Wipe). fn's error is returned unchanged.
func (s *Secret) Reveal(fn func([]byte) error) error {
	if s == nil {
		return newError("reveal", -1, -1, ErrInvalid, nil)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, err := s.access("reveal")
	if err != nil {
		return err
	}
	defer s.a.releaseAccess()
	return fn(b)
}

// Equal reports, in time independent of the contents, whether s and o hold
// the same bytes. Lengths are not secret: different lengths return at once.
// A nil or wiped secret equals nothing.
func (s *Secret) Equal(o *Secret) bool {
	if s == nil || o == nil {
		return false
	}
	if s == o {
		return s.Reveal(func([]byte) error { return nil }) == nil
	}
	// Lock in address order so two Equal calls with swapped arguments cannot
	// deadlock behind waiting writers. Secrets never move (non-moving GC).
	first, second := s, o
	if uintptr(unsafe.Pointer(o)) < uintptr(unsafe.Pointer(s)) {
		first, second = o, s
	}
	eq := false
	err := first.Reveal(func(x []byte) error {
		return second.Reveal(func(y []byte) error {
			eq = subtle.ConstantTimeCompare(x, y) == 1
			return nil
		})
	})
	return err == nil && eq
}

// EqualBytes reports, in time independent of the contents, whether s holds
// exactly b. A nil or wiped secret equals nothing.
func (s *Secret) EqualBytes(b []byte) bool {
	eq := false
	err := s.Reveal(func(x []byte) error {
		eq = subtle.ConstantTimeCompare(x, b) == 1
		return nil
	})
	return err == nil && eq
}

// Wipe zeroes the secret's slots, then returns them to the arena. It is
// idempotent; after it every access returns ErrWiped. Wiping a secret whose
// arena is closed only marks it wiped: Close already zeroed the memory.
func (s *Secret) Wipe() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wiped.Load() || s.a == nil {
		return
	}
	s.wiped.Store(true)
	r, err := s.a.acquire()
	if err != nil {
		return
	}
	b := r.bytes(s.off, s.span)
	clear(b)
	runtime.KeepAlive(b)
	s.a.free(s.off/s.a.slot, s.span/s.a.slot, true)
}

// String returns "REDACTED".
func (s *Secret) String() string { return redacted }

// GoString returns "REDACTED", so %#v redacts too.
func (s *Secret) GoString() string { return redacted }

// Format writes "REDACTED" for every verb, flag and width.
func (s *Secret) Format(f fmt.State, verb rune) { _, _ = io.WriteString(f, redacted) }

// LogValue makes log/slog print "REDACTED".
func (s *Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON refuses: a secret never becomes JSON.
func (s *Secret) MarshalJSON() ([]byte, error) {
	return nil, newError("encode", -1, -1, ErrEncode, nil)
}

// MarshalText refuses: a secret never becomes text (this also covers
// encoding/xml and slog's text handler).
func (s *Secret) MarshalText() ([]byte, error) {
	return nil, newError("encode", -1, -1, ErrEncode, nil)
}

// MarshalBinary refuses: a secret never becomes bytes (this covers
// encoding/gob).
func (s *Secret) MarshalBinary() ([]byte, error) {
	return nil, newError("encode", -1, -1, ErrEncode, nil)
}
