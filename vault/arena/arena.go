package arena

import (
	"crypto/cipher"
	"fmt"
	"io"
	"log/slog"
	"math/bits"
	"runtime"
	"strconv"
	"sync"
	"unsafe"
)

// Kind names the memory behind an arena, as reported in VaultProfile@1.
type Kind string

// The kinds of arena.
const (
	KindMemfdSecret Kind = "memfd_secret" // memfd_secret(2): locked, undumpable, outside the kernel direct map
	KindMlock       Kind = "mlock"        // anonymous mmap + MADV_DONTDUMP + mlock, guard pages
	KindNone        Kind = "none"         // no arena (closed, or never created)
)

func (k Kind) String() string { return string(k) }

const (
	// DefaultSlotSize is the slot size used when Options.SlotSize is 0.
	DefaultSlotSize = 64

	// MaxSize bounds New's size argument (1 GiB), far above any memlock
	// budget, so a size can never overflow the page rounding.
	MaxSize = 1 << 30
)

// Options tune New.
type Options struct {
	// SlotSize is the allocation unit in bytes (default 64). A secret of n
	// bytes occupies ceil(n/SlotSize) contiguous slots.
	SlotSize int

	// ForceFallback makes New behave as if memfd_secret returned ENOSYS, so
	// tests can exercise the mlock arena on a kernel that has memfd_secret.
	ForceFallback bool
}

// region is the mapped memory: guard page, data pages, guard page. It holds
// no Go pointers and is never referenced from the memory it describes.
type region struct {
	base  unsafe.Pointer // start of the reservation (first guard page)
	total int            // reservation length, guards included
	data  unsafe.Pointer // first data byte
	size  int            // data length, whole pages
	kind  Kind
}

// wipe zeroes every data byte.
func (r *region) wipe() {
	b := unsafe.Slice((*byte)(r.data), r.size)
	clear(b)
	runtime.KeepAlive(b)
}

// release wipes the data pages and unmaps the whole reservation.
func (r *region) release() error {
	r.wipe()
	return r.unmap()
}

// bytes returns the arena bytes [off, off+n). The caller holds an access
// reference (acquire) and has checked the bounds.
func (r *region) bytes(off, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(r.data, off)), n)[:n:n]
}

// Arena is a fixed-size pool of protected memory cut into equal slots. The
// allocation bitmap lives in ordinary memory and holds no secret. All methods
// are safe for concurrent use.
type Arena struct {
	mu      sync.Mutex
	cond    sync.Cond // signalled when active drops to 0 or the arena closes
	reg     *region   // nil once closed
	slot    int       // slot size in bytes
	nslots  int
	bits    []uint64 // bit i set: slot i in use
	used    int      // slots in use
	low     int      // every slot below low is in use
	active  int      // Secret operations currently touching the memory
	closing bool
	cleanup runtime.Cleanup
}

// New maps an arena of at least size bytes (rounded up to whole pages) of
// protected memory: memfd_secret where the kernel has it, otherwise anonymous
// memory with guard pages, MADV_DONTDUMP, MADV_WIPEONFORK and mlock. When the
// pages cannot be locked (RLIMIT_MEMLOCK) it returns an *Error with code
// LIMIT_EXCEEDED wrapping ErrLockLimit and releases everything it mapped: an
// arena never exists in unlocked memory.
func New(size int, opt Options) (*Arena, error) {
	slot := opt.SlotSize
	if slot == 0 {
		slot = DefaultSlotSize
	}
	switch {
	case size <= 0 || slot < 0 || slot > size:
		return nil, newError("new", -1, size, ErrInvalid, nil)
	case size > MaxSize:
		return nil, newError("new", -1, size, ErrTooLarge, nil)
	}
	r, err := mapRegion(size, opt.ForceFallback)
	if err != nil {
		return nil, err
	}
	n := r.size / slot
	a := &Arena{reg: r, slot: slot, nslots: n, bits: make([]uint64, (n+63)/64)}
	a.cond.L = &a.mu
	// A forgotten arena is wiped and unmapped once unreachable; Close is
	// still the caller's duty (cleanups may never run).
	a.cleanup = runtime.AddCleanup(a, func(r *region) { _ = r.release() }, r)
	return a, nil
}

// Kind reports the memory behind the arena, KindNone once closed.
func (a *Arena) Kind() Kind {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.reg == nil {
		return KindNone
	}
	return a.reg.kind
}

// Size reports the arena's data bytes (whole pages), 0 once closed.
func (a *Arena) Size() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.reg == nil {
		return 0
	}
	return a.reg.size
}

// SlotSize reports the allocation unit in bytes.
func (a *Arena) SlotSize() int { return a.slot }

// Range reports the address range [start, end) of the data pages, for
// matching against /proc/self/smaps. The guard pages lie just outside it.
// It is (0, 0) once closed.
func (a *Arena) Range() (start, end uintptr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.reg == nil {
		return 0, 0
	}
	start = uintptr(a.reg.data)
	return start, start + uintptr(a.reg.size)
}

// Used reports the bytes held by live secrets, counted in whole slots.
func (a *Arena) Used() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.used * a.slot
}

// Close wipes every byte of the arena and unmaps it, guards included. Live
// secrets become unusable (ErrClosed); wiping them afterwards is harmless.
// Close waits for running Fill, Reveal and Equal calls to return, so it must
// not be called from inside their callbacks. Closing twice returns nil.
func (a *Arena) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closing {
		for a.reg != nil {
			a.cond.Wait()
		}
		return nil
	}
	if a.reg == nil {
		return nil
	}
	a.closing = true
	for a.active > 0 {
		a.cond.Wait()
	}
	r := a.reg
	a.reg = nil
	a.cleanup.Stop()
	clear(a.bits)
	a.used, a.low = 0, 0
	err := r.release()
	a.cond.Broadcast()
	if err != nil {
		return newError("close", -1, -1, ErrUnavailable, err)
	}
	return nil
}

// IsZero reports whether the arena bytes [off, off+n) all read zero. It is a
// test accessor: it reveals one bit about memory that, by the package's
// invariants, holds no live secret when the question is asked. It reports
// false for a range outside the arena or a closed arena.
func (a *Arena) IsZero(off, n int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.reg == nil || a.closing || off < 0 || n < 0 || n > a.reg.size-off {
		return false
	}
	var acc byte
	for _, c := range a.reg.bytes(off, n) {
		acc |= c
	}
	return acc == 0
}

// acquire pins the mapping for one operation on secret memory.
func (a *Arena) acquire() (*region, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.reg == nil || a.closing {
		return nil, ErrClosed
	}
	a.active++
	return a.reg, nil
}

// releaseAccess unpins the mapping.
func (a *Arena) releaseAccess() {
	a.mu.Lock()
	a.active--
	if a.active == 0 && a.closing {
		a.cond.Broadcast()
	}
	a.mu.Unlock()
}

// Alloc reserves ceil(n/SlotSize) contiguous slots, first fit, and returns a
// zeroed secret of length n. When no run is long enough it returns an *Error
// with code LIMIT_EXCEEDED wrapping ErrExhausted, without allocating memory
// proportional to n.
func (a *Arena) Alloc(n int) (*Secret, error) {
	if n <= 0 {
		return nil, newError("alloc", -1, n, ErrInvalid, nil)
	}
	a.mu.Lock()
	if a.reg == nil || a.closing {
		a.mu.Unlock()
		return nil, newError("alloc", -1, n, ErrClosed, nil)
	}
	if n > a.nslots*a.slot {
		a.mu.Unlock()
		return nil, newError("alloc", -1, n, ErrExhausted, nil)
	}
	k := (n + a.slot - 1) / a.slot
	i := a.find(k)
	if i < 0 {
		a.mu.Unlock()
		return nil, newError("alloc", -1, n, ErrExhausted, nil)
	}
	a.setBits(i, k, true)
	a.used += k
	if i == a.low {
		a.low = i + k
	}
	a.mu.Unlock()
	return &Secret{a: a, off: i * a.slot, n: n, span: k * a.slot}, nil
}

// find returns the first index of k contiguous free slots, or -1. It works a
// 64-slot bitmap word at a time: a run crossing into the word is its leading
// free bits joined to the previous word's trailing ones, and a run inside the
// word is found by and-ing the free mask with itself shifted (log k steps).
func (a *Arena) find(k int) int {
	run := 0 // free slots just before word wi
	for wi := a.low >> 6; wi < len(a.bits); wi++ {
		free := ^a.bits[wi]
		if tail := a.nslots - wi*64; tail < 64 {
			free &= 1<<uint(tail) - 1 // slots past the arena's end are never free
		}
		if free == ^uint64(0) {
			if run += 64; run >= k {
				return wi*64 + 64 - run
			}
			continue
		}
		if lead := bits.TrailingZeros64(^free); run+lead >= k {
			return wi*64 - run
		}
		if k <= 64 {
			m := free // bit p set: slots p … p+r-1 are free
			for r := 1; r < k && m != 0; {
				s := min(r, k-r)
				m &= m >> uint(s)
				r += s
			}
			if m != 0 {
				return wi*64 + bits.TrailingZeros64(m)
			}
		}
		run = bits.LeadingZeros64(^free)
	}
	return -1
}

func (a *Arena) setBits(i, k int, v bool) {
	for j := i; j < i+k; j++ {
		if v {
			a.bits[j>>6] |= 1 << (j & 63)
		} else {
			a.bits[j>>6] &^= 1 << (j & 63)
		}
	}
}

// free returns k slots from slot index i to the pool; their bytes are already
// zero. It also drops the caller's access reference when dropRef is set.
func (a *Arena) free(i, k int, dropRef bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if dropRef {
		a.active--
		if a.active == 0 && a.closing {
			a.cond.Broadcast()
		}
	}
	if a.reg == nil {
		return // closed: the bitmap was reset with the memory
	}
	a.setBits(i, k, false)
	a.used -= k
	if i < a.low {
		a.low = i
	}
}

// Open decrypts ciphertext with aead straight into a new secret of
// len(ciphertext)-aead.Overhead() bytes: the plaintext is never in ordinary
// memory. The destination handed to aead.Open is arena memory with exactly
// that capacity, and Open checks the AEAD did not reallocate. On any failure
// the slots are wiped and freed.
func (a *Arena) Open(aead cipher.AEAD, nonce, ciphertext, aad []byte) (*Secret, error) {
	n := len(ciphertext) - aead.Overhead()
	if n <= 0 || len(nonce) != aead.NonceSize() {
		return nil, newError("open", -1, n, ErrInvalid, nil)
	}
	s, err := a.Alloc(n)
	if err != nil {
		e := err.(*Error)
		e.Op = "open"
		return nil, e
	}
	var fail error
	err = s.Fill(func(dst []byte) error {
		out, err := aead.Open(dst[:0], nonce, ciphertext, aad)
		if err != nil {
			fail = ErrAuth
			return fail
		}
		if len(out) != n || unsafe.SliceData(out) != unsafe.SliceData(dst) {
			clear(out)
			runtime.KeepAlive(out)
			fail = ErrRealloc
			return fail
		}
		return nil
	})
	if err != nil {
		s.Wipe()
		if fail == nil {
			fail = ErrClosed
		}
		return nil, newError("open", -1, n, fail, nil)
	}
	return s, nil
}

// The arena prints only its kind and size, and refuses encoding: it holds
// secret memory.

// String returns a summary with the kind and size, never content.
func (a *Arena) String() string {
	if a == nil {
		return "arena(nil)"
	}
	return "arena(" + string(a.Kind()) + ", " + strconv.Itoa(a.Size()) + " bytes)"
}

// GoString is String.
func (a *Arena) GoString() string { return a.String() }

// Format writes String for every verb.
func (a *Arena) Format(f fmt.State, verb rune) { _, _ = io.WriteString(f, a.String()) }

// LogValue logs the summary.
func (a *Arena) LogValue() slog.Value { return slog.StringValue(a.String()) }

// MarshalJSON refuses: an arena is not data.
func (a *Arena) MarshalJSON() ([]byte, error) { return nil, newError("encode", -1, -1, ErrEncode, nil) }

// MarshalText refuses: an arena is not data.
func (a *Arena) MarshalText() ([]byte, error) { return nil, newError("encode", -1, -1, ErrEncode, nil) }

// MarshalBinary refuses: an arena is not data.
func (a *Arena) MarshalBinary() ([]byte, error) {
	return nil, newError("encode", -1, -1, ErrEncode, nil)
}
