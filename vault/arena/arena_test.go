//go:build linux && (amd64 || arm64 || riscv64)

package arena

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/sys/unix"

	"github.com/privacycut/privacycut/receipts"
)

// TestMain lets the test binary re-execute itself as a helper process.
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(m.Run())
}

// kinds are the arena kinds a test runs against. memfd_secret is skipped with
// a message naming the facility when the kernel lacks it.
var kinds = []struct {
	name  string
	force bool
	want  Kind
}{
	{"memfd_secret", false, KindMemfdSecret},
	{"mlock", true, KindMlock},
}

func haveMemfdSecret() bool {
	fd, err := unix.MemfdSecret(unix.O_CLOEXEC)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

func newArena(t testing.TB, size int, force bool, slot int) *Arena {
	t.Helper()
	if !force && !haveMemfdSecret() {
		t.Skip("memfd_secret(2) not available on this kernel")
	}
	a, err := New(size, Options{SlotSize: slot, ForceFallback: force})
	if err != nil {
		t.Fatalf("New(%d): %v", size, err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a
}

func fill(t testing.TB, s *Secret, b []byte) {
	t.Helper()
	if err := s.Fill(func(dst []byte) error { copy(dst, b); return nil }); err != nil {
		t.Fatalf("Fill: %v", err)
	}
}

func reveal(t testing.TB, s *Secret) []byte {
	t.Helper()
	var out []byte
	if err := s.Reveal(func(b []byte) error { out = append(out, b...); return nil }); err != nil {
		t.Fatalf("Reveal: %v", err)
	}
	return out
}

func codeOfErr(err error) receipts.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return "<not *arena.Error>"
}

func TestNewKinds(t *testing.T) {
	pg := os.Getpagesize()
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			a := newArena(t, 10000, k.force, 0)
			start, end := a.Range()
			got := struct {
				Kind       Kind
				Size, Used int
				Span       uintptr
				Slot       int
				Aligned    bool
			}{a.Kind(), a.Size(), a.Used(), end - start, a.SlotSize(), start%uintptr(pg) == 0}
			want := got
			want.Kind, want.Size, want.Used, want.Span, want.Slot, want.Aligned =
				k.want, 3*pg, 0, uintptr(3*pg), DefaultSlotSize, true
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("arena state (-want +got):\n%s", diff)
			}
			if !a.IsZero(0, a.Size()) {
				t.Error("a new arena does not read zero")
			}
		})
	}
}

// TestSecretmemUnavailable: memfd_secret refused by the kernel (ENOSYS), by
// a container's seccomp filter (EPERM) or because secretmem is disabled
// (EINVAL) means the locked anonymous arena; any other error fails New
// rather than quietly dropping to the weaker arena.
func TestSecretmemUnavailable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{unix.ENOSYS, true},
		{unix.EPERM, true},
		{unix.EINVAL, true},
		{fmt.Errorf("memfd_secret: %w", unix.EPERM), true},
		{unix.EMFILE, false},
		{unix.ENFILE, false},
		{unix.ENOMEM, false},
		{unix.EAGAIN, false},
		{unix.EACCES, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := secretmemUnavailable(tt.err); got != tt.want {
			t.Errorf("secretmemUnavailable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestNewInvalid(t *testing.T) {
	tests := []struct {
		name     string
		size     int
		opt      Options
		sentinel error
		code     receipts.Code
	}{
		{"zero size", 0, Options{}, ErrInvalid, ""},
		{"negative size", -1, Options{}, ErrInvalid, ""},
		{"negative slot", 4096, Options{SlotSize: -8}, ErrInvalid, ""},
		{"slot above size", 64, Options{SlotSize: 128}, ErrInvalid, ""},
		{"above MaxSize", MaxSize + 1, Options{}, ErrTooLarge, receipts.LimitExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.size, tt.opt)
			if a != nil || !errors.Is(err, tt.sentinel) || codeOfErr(err) != tt.code {
				t.Fatalf("New = %v, %v; want nil, %v with code %q", a, err, tt.sentinel, tt.code)
			}
		})
	}
}

// TestAllocFirstFit pins first-fit placement over contiguous slots, including
// reuse of a freed hole and a run that crosses a 64-slot bitmap word.
func TestAllocFirstFit(t *testing.T) {
	a := newArena(t, 4096, true, 64) // 64 slots of 64 bytes
	alloc := func(n int) *Secret {
		t.Helper()
		s, err := a.Alloc(n)
		if err != nil {
			t.Fatalf("Alloc(%d): %v", n, err)
		}
		return s
	}
	type pos struct{ Off, Span int }
	at := func(s *Secret) pos { off, n := s.Slot(); return pos{off, n} }

	s1 := alloc(1)   // slot 0
	s2 := alloc(65)  // slots 1-2
	s3 := alloc(64)  // slot 3
	s2.Wipe()        // hole at 1-2
	s4 := alloc(129) // 3 slots: does not fit the hole → 4-6
	s5 := alloc(100) // 2 slots: fits the hole → 1-2
	s6 := alloc(1)   // slot 7
	got := []pos{at(s1), at(s3), at(s4), at(s5), at(s6)}
	want := []pos{{0, 64}, {192, 64}, {256, 192}, {64, 128}, {448, 64}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("placements (-want +got):\n%s", diff)
	}
	if got, want := a.Used(), 8*64; got != want {
		t.Errorf("Used = %d, want %d", got, want)
	}
	// 56 slots remain (8..63). Take all of them, free two adjacent ones in
	// the middle, and a 2-slot request must land exactly there.
	var rest []*Secret
	for range 56 {
		rest = append(rest, alloc(64))
	}
	if _, err := a.Alloc(1); !errors.Is(err, ErrExhausted) {
		t.Fatalf("Alloc on a full arena = %v, want ErrExhausted", err)
	}
	rest[30].Wipe()
	rest[31].Wipe()
	if got, want := at(alloc(128)), (pos{(8 + 30) * 64, 128}); got != want {
		t.Errorf("2-slot request after freeing slots 38-39 at %+v, want %+v", got, want)
	}
}

// TestAllocAcrossWords checks runs that span bitmap words and the skipping of
// full and empty words.
func TestAllocAcrossWords(t *testing.T) {
	a := newArena(t, 64*1024, true, 64) // 1024 slots = 16 words
	first, err := a.Alloc(60 * 64)      // slots 0-59
	if err != nil {
		t.Fatal(err)
	}
	big, err := a.Alloc(200 * 64) // slots 60-259: crosses words 0..4
	if err != nil {
		t.Fatal(err)
	}
	if off, _ := big.Slot(); off != 60*64 {
		t.Errorf("200-slot run at offset %d, want %d", off, 60*64)
	}
	first.Wipe()
	small, err := a.Alloc(61 * 64) // 61 slots do not fit in the 60-slot hole
	if err != nil {
		t.Fatal(err)
	}
	if off, _ := small.Slot(); off != 260*64 {
		t.Errorf("61-slot run at offset %d, want %d", off, 260*64)
	}
	exact, err := a.Alloc(60 * 64)
	if err != nil {
		t.Fatal(err)
	}
	if off, _ := exact.Slot(); off != 0 {
		t.Errorf("60-slot run at offset %d, want 0", off)
	}
	whole := (1024 - 321) * 64
	tail, err := a.Alloc(whole)
	if err != nil {
		t.Fatalf("Alloc of the whole remainder (%d bytes): %v", whole, err)
	}
	if off, _ := tail.Slot(); off != 321*64 {
		t.Errorf("remainder at offset %d, want %d", off, 321*64)
	}
	if a.Used() != a.Size() {
		t.Errorf("Used = %d, want %d", a.Used(), a.Size())
	}
}

// TestExhaustion is P7: filling to capacity, the next Alloc refuses with
// LIMIT_EXCEEDED, and a refused 1 MiB request does not grow the heap by
// anything like its size.
func TestExhaustion(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			const size = 64 * 1024
			a := newArena(t, size, k.force, 64)
			if _, err := a.Alloc(1 << 20); !errors.Is(err, ErrExhausted) || codeOfErr(err) != receipts.LimitExceeded {
				t.Fatalf("Alloc(1 MiB) on an empty 64 KiB arena = %v, want ErrExhausted/LIMIT_EXCEEDED", err)
			}
			var held []*Secret
			for a.Used() < a.Size() {
				s, err := a.Alloc(64)
				if err != nil {
					t.Fatalf("Alloc after %d secrets: %v", len(held), err)
				}
				fill(t, s, bytes.Repeat([]byte{0xa5}, 64))
				held = append(held, s)
			}
			if len(held) != size/64 {
				t.Fatalf("capacity %d secrets, want %d", len(held), size/64)
			}
			_, err := a.Alloc(1)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrExhausted) {
				t.Fatalf("Alloc on a full arena = %v, want *Error wrapping ErrExhausted", err)
			}
			type fields struct {
				Code           receipts.Code
				Op             string
				Off, Len       int
				Exhausted, Sys bool
			}
			got := fields{e.Code, e.Op, e.Off, e.Len, e.Err == ErrExhausted, e.Sys != nil}
			if diff := cmp.Diff(fields{receipts.LimitExceeded, "alloc", -1, 1, true, false}, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}

			const refused = 1 << 20
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range 8 {
				if _, err := a.Alloc(refused); !errors.Is(err, ErrExhausted) {
					t.Fatalf("Alloc(1 MiB) on a full arena = %v", err)
				}
			}
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew >= refused/4 {
				t.Errorf("8 refused 1 MiB requests allocated %d heap bytes, want far below %d", grew, refused)
			}
			if after.HeapAlloc > before.HeapAlloc+refused/4 {
				t.Errorf("HeapAlloc grew from %d to %d across refused requests", before.HeapAlloc, after.HeapAlloc)
			}
			if n := testing.AllocsPerRun(100, func() { _, _ = a.Alloc(refused) }); n > 1 {
				t.Errorf("a refused Alloc makes %v heap allocations, want at most 1 (the error)", n)
			}
			for _, s := range held {
				s.Wipe()
			}
			if a.Used() != 0 || !a.IsZero(0, a.Size()) {
				t.Errorf("after wiping all: Used = %d, zero = %v", a.Used(), a.IsZero(0, a.Size()))
			}
		})
	}
}

// TestWipeZeroes is M3: the slots read non-zero while the secret lives and
// zero after Wipe; the secret refuses use after Wipe.
func TestWipeZeroes(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			a := newArena(t, 8192, k.force, 0)
			pad, err := a.Alloc(10) // so the secret does not start at 0
			if err != nil {
				t.Fatal(err)
			}
			defer pad.Wipe()
			s, err := a.Alloc(100)
			if err != nil {
				t.Fatal(err)
			}
			off, n := s.Slot()
			if off != 64 || n != 128 {
				t.Fatalf("Slot = (%d, %d), want (64, 128)", off, n)
			}
			if !a.IsZero(off, n) {
				t.Fatal("a freshly allocated secret does not read zero")
			}
			canary := []byte("M3-CANARY-" + randHex(t, 90)) // exactly 100 bytes
			fill(t, s, canary)
			if a.IsZero(off, n) {
				t.Fatal("IsZero true over a filled secret: the accessor proves nothing")
			}
			if !a.IsZero(off+100, 28) {
				t.Error("the slack after the secret is not zero")
			}
			if got := reveal(t, s); !bytes.Equal(got, canary) {
				t.Fatal("Reveal did not return what Fill wrote")
			}
			s.Wipe()
			if !a.IsZero(off, n) {
				t.Error("slots not zero after Wipe")
			}
			s.Wipe() // idempotent
			if s.Len() != 0 {
				t.Errorf("Len after Wipe = %d", s.Len())
			}
			if o, m := s.Slot(); o != off || m != n {
				t.Errorf("Slot after Wipe = (%d, %d), want the former (%d, %d)", o, m, off, n)
			}
			for name, err := range map[string]error{
				"Reveal": s.Reveal(func([]byte) error { t.Error("Reveal ran fn after Wipe"); return nil }),
				"Fill":   s.Fill(func([]byte) error { t.Error("Fill ran fn after Wipe"); return nil }),
			} {
				if !errors.Is(err, ErrWiped) {
					t.Errorf("%s after Wipe = %v, want ErrWiped", name, err)
				}
			}
			if s.EqualBytes(nil) || s.EqualBytes(canary) {
				t.Error("a wiped secret compares equal")
			}
			if a.Used() != 64 {
				t.Errorf("Used after Wipe = %d, want 64", a.Used())
			}
		})
	}
}

func TestFillErrorZeroes(t *testing.T) {
	a := newArena(t, 4096, true, 0)
	s, err := a.Alloc(32)
	if err != nil {
		t.Fatal(err)
	}
	off, n := s.Slot()
	boom := errors.New("caller failure")
	err = s.Fill(func(dst []byte) error {
		copy(dst, "half written secret material....")
		return boom
	})
	if err != boom {
		t.Fatalf("Fill = %v, want the callback's error unchanged", err)
	}
	if !a.IsZero(off, n) {
		t.Error("a failed Fill left bytes behind")
	}
	if err := s.Fill(func(dst []byte) error {
		if len(dst) != 32 || cap(dst) != 32 {
			t.Errorf("Fill slice len %d cap %d, want 32 32", len(dst), cap(dst))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestEqual(t *testing.T) {
	a := newArena(t, 4096, true, 0)
	b := newArena(t, 4096, true, 0)
	mk := func(ar *Arena, v string) *Secret {
		s, err := ar.Alloc(len(v))
		if err != nil {
			t.Fatal(err)
		}
		fill(t, s, []byte(v))
		return s
	}
	x, y, z, short, other := mk(a, "same-value"), mk(a, "same-value"), mk(a, "diff-value"), mk(a, "same"), mk(b, "same-value")
	wiped := mk(a, "same-value")
	wiped.Wipe()
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"equal values", x.Equal(y), true},
		{"symmetric", y.Equal(x), true},
		{"self", x.Equal(x), true},
		{"different values", x.Equal(z), false},
		{"different lengths", x.Equal(short), false},
		{"other arena", x.Equal(other), true},
		{"wiped", x.Equal(wiped), false},
		{"wiped self", wiped.Equal(wiped), false},
		{"nil", x.Equal(nil), false},
		{"bytes equal", x.EqualBytes([]byte("same-value")), true},
		{"bytes differ", x.EqualBytes([]byte("same-valuf")), false},
		{"bytes prefix", x.EqualBytes([]byte("same")), false},
		{"nil secret bytes", (*Secret)(nil).EqualBytes(nil), false},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// TestOpen decrypts straight into the arena with two real AEADs, and checks
// that authentication failures and misbehaving AEADs leave nothing behind.
func TestOpen(t *testing.T) {
	key := make([]byte, 32)
	rand.Read(key)
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	xc, err := chacha20poly1305.NewX(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, aead := range []struct {
		name string
		c    cipher.AEAD
	}{{"aes-gcm", gcm}, {"xchacha20poly1305", xc}} {
		for _, k := range kinds {
			t.Run(aead.name+"/"+k.name, func(t *testing.T) {
				a := newArena(t, 8192, k.force, 0)
				plain := []byte("OPEN-CANARY-" + randHex(t, 40))
				nonce := make([]byte, aead.c.NonceSize())
				rand.Read(nonce)
				aad := []byte("lease pcl:x epoch 1")
				ct := aead.c.Seal(nil, nonce, plain, aad)

				s, err := a.Open(aead.c, nonce, ct, aad)
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				if !s.EqualBytes(plain) || s.Len() != len(plain) {
					t.Fatal("opened secret differs from the plaintext")
				}
				s.Wipe()

				bad := bytes.Clone(ct)
				bad[3] ^= 1
				cases := []struct {
					name           string
					nonce, ct, aad []byte
					sentinel       error
				}{
					{"tampered ciphertext", nonce, bad, aad, ErrAuth},
					{"wrong aad", nonce, ct, []byte("lease pcl:y epoch 1"), ErrAuth},
					{"short nonce", nonce[1:], ct, aad, ErrInvalid},
					{"no plaintext", nonce, ct[:aead.c.Overhead()], aad, ErrInvalid},
				}
				for _, c := range cases {
					s, err := a.Open(aead.c, c.nonce, c.ct, c.aad)
					if s != nil || !errors.Is(err, c.sentinel) {
						t.Errorf("%s: Open = %v, %v; want nil, %v", c.name, s, err, c.sentinel)
					}
					if bytes.Contains([]byte(fmt.Sprint(err)), plain[:12]) {
						t.Errorf("%s: error text holds plaintext", c.name)
					}
				}
				if a.Used() != 0 || !a.IsZero(0, a.Size()) {
					t.Errorf("after failed opens: Used = %d, zero = %v", a.Used(), a.IsZero(0, a.Size()))
				}
			})
		}
	}
}

// heapAEAD ignores dst and decrypts into a fresh heap slice: the behaviour
// Open must detect and refuse.
type heapAEAD struct{ cipher.AEAD }

func (h heapAEAD) Open(_, nonce, ct, aad []byte) ([]byte, error) {
	return h.AEAD.Open(nil, nonce, ct, aad)
}

// shortAEAD returns a prefix of the arena destination: in place, but not the
// length Open allocated.
type shortAEAD struct{ cipher.AEAD }

func (h shortAEAD) Open(dst, nonce, ct, aad []byte) ([]byte, error) {
	out, err := h.AEAD.Open(dst, nonce, ct, aad)
	return out[:len(out)-1], err
}

func TestOpenRefusesReallocation(t *testing.T) {
	key := make([]byte, 32)
	rand.Read(key)
	c, err := chacha20poly1305.New(key)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, c.NonceSize())
	ct := c.Seal(nil, nonce, []byte("value that must stay in the arena"), nil)
	for _, aead := range []cipher.AEAD{heapAEAD{c}, shortAEAD{c}} {
		a := newArena(t, 4096, true, 0)
		s, err := a.Open(aead, nonce, ct, nil)
		if s != nil || !errors.Is(err, ErrRealloc) {
			t.Errorf("%T: Open = %v, %v; want ErrRealloc", aead, s, err)
		}
		if a.Used() != 0 || !a.IsZero(0, a.Size()) {
			t.Errorf("%T: slots not wiped and freed", aead)
		}
	}
}

func TestClose(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			if !k.force && !haveMemfdSecret() {
				t.Skip("memfd_secret(2) not available on this kernel")
			}
			a, err := New(4096, Options{ForceFallback: k.force})
			if err != nil {
				t.Fatal(err)
			}
			s, err := a.Alloc(16)
			if err != nil {
				t.Fatal(err)
			}
			fill(t, s, []byte("0123456789abcdef"))
			start, end := a.Range()
			if err := a.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := a.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			got := []any{a.Kind(), a.Size(), a.Used(), a.IsZero(0, 1)}
			if diff := cmp.Diff([]any{KindNone, 0, 0, false}, got); diff != "" {
				t.Errorf("closed arena state (-want +got):\n%s", diff)
			}
			if err := s.Reveal(func([]byte) error { return nil }); !errors.Is(err, ErrClosed) {
				t.Errorf("Reveal after Close = %v, want ErrClosed", err)
			}
			if _, err := a.Alloc(1); !errors.Is(err, ErrClosed) {
				t.Errorf("Alloc after Close = %v, want ErrClosed", err)
			}
			s.Wipe() // harmless
			// The mapping is gone: mincore on the former range fails with ENOMEM.
			vec := make([]byte, 1)
			_, _, e := unix.Syscall(unix.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(&vec[0])))
			if e != unix.ENOMEM {
				t.Errorf("mincore on the closed range = %v, want ENOMEM (unmapped)", e)
			}
		})
	}
}

// TestCloseWaitsForReveal shows Close does not unmap under a running Reveal.
func TestCloseWaitsForReveal(t *testing.T) {
	a, err := New(4096, Options{ForceFallback: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Alloc(8)
	if err != nil {
		t.Fatal(err)
	}
	inside, proceed, closed := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		_ = s.Reveal(func(b []byte) error {
			close(inside)
			<-proceed
			b[0] = 1 // would fault if Close had unmapped
			return nil
		})
	}()
	<-inside
	go func() { closed <- a.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a Reveal was running", err)
	default:
	}
	// A new access is refused once Close has begun; poll until it has.
	for {
		a.mu.Lock()
		c := a.closing
		a.mu.Unlock()
		if c {
			break
		}
		runtime.Gosched()
	}
	if _, err := a.Alloc(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Alloc during Close = %v, want ErrClosed", err)
	}
	close(proceed)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestConcurrent runs many goroutines allocating, filling, revealing,
// comparing and wiping secrets in one arena (run it with -race). Every secret
// must read back its own goroutine's pattern, and the arena must end empty and
// zero.
func TestConcurrent(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			a := newArena(t, 64*1024, k.force, 32)
			const workers, rounds = 16, 300
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			shared, err := a.Alloc(40)
			if err != nil {
				t.Fatal(err)
			}
			fill(t, shared, bytes.Repeat([]byte{0x77}, 40))
			for w := range workers {
				wg.Go(func() {
					pat := byte(w + 1)
					for r := range rounds {
						n := 1 + (r*37+w*11)%300
						s, err := a.Alloc(n)
						if errors.Is(err, ErrExhausted) {
							continue
						}
						if err != nil {
							errs <- err
							return
						}
						if err := s.Fill(func(d []byte) error {
							for i := range d {
								d[i] = pat
							}
							return nil
						}); err != nil {
							errs <- err
							return
						}
						ok := true
						_ = s.Reveal(func(b []byte) error {
							for _, c := range b {
								ok = ok && c == pat
							}
							return nil
						})
						if !ok || s.Len() != n {
							errs <- fmt.Errorf("worker %d round %d: secret overwritten", w, r)
							return
						}
						if s.Equal(shared) {
							errs <- fmt.Errorf("worker %d: unequal secrets compare equal", w)
							return
						}
						s.Wipe()
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			shared.Wipe()
			if a.Used() != 0 || !a.IsZero(0, a.Size()) {
				t.Errorf("after the run: Used = %d, zero = %v", a.Used(), a.IsZero(0, a.Size()))
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{newError("alloc", -1, 1048576, ErrExhausted, nil), "arena: alloc of 1048576 bytes: arena exhausted (LIMIT_EXCEEDED)"},
		{newError("new", -1, 65536, ErrLockLimit, unix.EAGAIN), "arena: new of 65536 bytes: memory lock limit reached: resource temporarily unavailable (LIMIT_EXCEEDED)"},
		{newError("reveal", 128, 16, ErrWiped, nil), "arena: reveal at offset 128 of 16 bytes: secret wiped"},
		{newError("new", -1, 4096, ErrUnavailable, unix.ENOSYS), "arena: new of 4096 bytes: protected memory unavailable: function not implemented (VAULT_PROFILE_NOT_PROVEN)"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	if err := newError("new", -1, 1, ErrLockLimit, unix.ENOMEM); !errors.Is(err, unix.ENOMEM) || !errors.Is(err, ErrLockLimit) {
		t.Error("errors.Is does not see both the sentinel and the errno")
	}
}

func randHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, (n+1)/2)
	rand.Read(b)
	return fmt.Sprintf("%x", b)[:n]
}

func BenchmarkAllocFillWipe64(b *testing.B) {
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			a := newArena(b, 1<<20, k.force, 64)
			src := bytes.Repeat([]byte{0x5a}, 64)
			b.ReportAllocs()
			for b.Loop() {
				s, err := a.Alloc(64)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Fill(func(d []byte) error { copy(d, src); return nil }); err != nil {
					b.Fatal(err)
				}
				s.Wipe()
			}
		})
	}
}

// BenchmarkAllocFragmented measures first fit when the free run is far in.
func BenchmarkAllocFragmented(b *testing.B) {
	a := newArena(b, 1<<20, true, 64)
	// Occupy every other slot in the first half so first fit must scan.
	var keep []*Secret
	for i := 0; i < a.Size()/64/2; i++ {
		s, err := a.Alloc(64)
		if err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			keep = append(keep, s)
		} else {
			defer s.Wipe()
		}
	}
	for _, s := range keep {
		s.Wipe()
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := a.Alloc(128)
		if err != nil {
			b.Fatal(err)
		}
		s.Wipe()
	}
}

// TestFindMatchesNaive checks the run-skipping first-fit search against a
// bit-by-bit reference on random bitmaps, including arenas whose slot count
// is not a multiple of 64.
func TestFindMatchesNaive(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(1, 2))
	naive := func(a *Arena, k int) int {
		run := 0
		for i := 0; i < a.nslots; i++ {
			if a.bits[i>>6]&(1<<(i&63)) != 0 {
				run = 0
				continue
			}
			if run++; run == k {
				return i - k + 1
			}
		}
		return -1
	}
	for iter := range 2000 {
		n := 1 + rng.IntN(300)
		a := &Arena{nslots: n, bits: make([]uint64, (n+63)/64)}
		density := rng.Float64()
		for i := range n {
			if rng.Float64() < density {
				a.setBits(i, 1, true)
			}
		}
		// Keep the invariant the search relies on: every slot below low is
		// in use.
		a.low = rng.IntN(n + 1)
		a.setBits(0, a.low, true)
		for _, k := range []int{1, 2, 3, 7, 63, 64, 65, 130, n, n + 1} {
			if got, want := a.find(k), naive(a, k); got != want {
				t.Fatalf("iteration %d, %d slots, density %.2f: find(%d) = %d, want %d", iter, n, density, k, got, want)
			}
		}
	}
}
