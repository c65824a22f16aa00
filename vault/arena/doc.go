// Package arena keeps vaultd's secret bytes in protected memory outside the Go
// heap: a fixed-size arena cut into equal slots, and a Secret type that is a
// handle on some of those slots.
//
// An Arena is mapped once, at start-up, at its final size:
//
//   - Where the kernel has memfd_secret(2), a secretmem file is sized once and
//     mapped MAP_SHARED into the middle of a PROT_NONE reservation, leaving a
//     guard page on each side. The kernel marks those pages locked and
//     undumpable (VmFlags lo, dd), removes them from its direct map, zeroes
//     them on free, and refuses them to process_vm_readv, /proc/pid/mem and
//     ptrace, even for root. mlock is never called on them: it fails by design.
//   - Otherwise (memfd_secret fails with ENOSYS, with EPERM as under a
//     container's seccomp filter, or with EINVAL; or Options.ForceFallback)
//     the middle of the reservation becomes anonymous private memory with
//     MADV_DONTDUMP, MADV_WIPEONFORK and mlock, and the arena's Kind says
//     so. Any other error of memfd_secret fails New.
//
// If the pages cannot be locked (RLIMIT_MEMLOCK without CAP_IPC_LOCK), New
// returns an *Error with code LIMIT_EXCEEDED and unmaps everything. mlockall
// is never used.
//
// Allocation is first fit over contiguous slots, tracked by a bitmap in
// ordinary memory that records only which slots are in use. Exhaustion
// returns an *Error with code LIMIT_EXCEEDED wrapping ErrExhausted; it never
// falls back to ordinary memory and never allocates in proportion to the
// request.
//
// A Secret is written in place with Fill, or decrypted straight into the
// arena with Arena.Open, read only through Reveal, compared in constant time
// with Equal and EqualBytes, and zeroed and freed with Wipe. It prints as
// REDACTED under every fmt verb, GoString and slog, and refuses JSON, text
// and binary encoding.
//
// # Security properties
//
// Guaranteed, on Linux amd64/arm64/riscv64:
//
//   - Bytes written through Fill or Open live only in arena pages that the
//     kernel keeps locked in RAM (never swapped) and out of core dumps; with
//     KindMemfdSecret they are also unreadable to other processes, root
//     included. Callers and tests confirm this from /proc/self/smaps (see
//     package harden), not from return codes.
//   - An arena never exists unlocked: a lock failure is an error, not a
//     degraded arena. Exhaustion refuses; nothing spills to the heap.
//   - Open hands the AEAD a destination inside the arena of exactly the
//     plaintext's capacity and refuses (wiping the slots) if the AEAD wrote
//     elsewhere, so decrypted bytes do not pass through the Go heap.
//   - Wipe, Close and a failed Fill or Open zero the bytes (clear followed by
//     runtime.KeepAlive) before the slots are reused or unmapped. A freshly
//     allocated secret reads zero.
//   - A Secret holds only an arena pointer, an offset and lengths, so a panic
//     traceback, a %v of a struct holding it, or a Go pointer dump shows no
//     secret bytes. The arena stores no Go pointers.
//   - Errors carry sizes, offsets and codes, never secret bytes.
//
// Not guaranteed:
//
//   - Copies the caller makes. A slice passed to Fill's or Reveal's callback
//     that is appended to, converted to a string, formatted, or copied into a
//     heap buffer leaves an unzeroizable copy in ordinary memory. Bytes that
//     arrived in a heap buffer before being copied in stay there (trap: copy
//     from a heap temporary); decrypt with Open or read(2) straight into Fill's
//     slice instead.
//   - Key schedules. crypto/aes and chacha20poly1305 copy the key into heap
//     objects; keep AEAD instances short-lived.
//   - Protection against root with the mlock kind (root reads /proc/pid/mem),
//     against the kernel, hibernation images, kernel crash dumps or VM
//     snapshots. memfd_secret inhibits hibernation; the others are host
//     settings.
//   - Constant time for lengths: Equal and EqualBytes reveal whether lengths
//     differ.
//   - Finalization. An arena dropped without Close is wiped and unmapped by a
//     runtime cleanup only if the garbage collector gets to it.
//
// Caller's duties: size the arena at start-up within RLIMIT_MEMLOCK; Close it
// at shutdown; Wipe every secret when done; never retain or copy the slices
// given to callbacks; never call Fill or Wipe on a secret from inside its own
// Reveal, nor Close from inside any callback; pass secrets by *Secret, never
// the bytes by value (tracebacks print by-value arguments); harden the
// process (package harden) so the rest of its memory is not dumpable.
package arena
