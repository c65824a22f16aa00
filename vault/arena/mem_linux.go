//go:build linux && (amd64 || arm64 || riscv64)

package arena

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapRegion obtains size bytes (rounded up to whole pages) of protected memory
// between two PROT_NONE guard pages. It tries memfd_secret first unless
// forceFallback is set, and falls back to an anonymous locked mapping only when
// memfd_secret is not available here (secretmemUnavailable). Every failure
// releases everything obtained so far.
func mapRegion(size int, forceFallback bool) (*region, error) {
	pg := os.Getpagesize()
	dataLen := (size + pg - 1) / pg * pg
	total := dataLen + 2*pg

	// The reservation: guard | data | guard, all PROT_NONE. MAP_NORESERVE
	// because the guards are never backed and the middle is replaced below.
	base, err := unix.MmapPtr(-1, 0, nil, uintptr(total), unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, newError("new", -1, size, ErrUnavailable, err)
	}
	r := &region{base: base, total: total, data: unsafe.Add(base, pg), size: dataLen}
	fail := func(sentinel, sys error) (*region, error) {
		_ = unix.MunmapPtr(base, uintptr(total))
		return nil, newError("new", -1, size, sentinel, sys)
	}

	if !forceFallback {
		fd, err := unix.MemfdSecret(unix.O_CLOEXEC)
		switch {
		case err == nil:
			if err := mapSecretmem(r, fd); err != nil {
				return fail(classify(err), err)
			}
			r.kind = KindMemfdSecret
			return r, nil
		case secretmemUnavailable(err):
			// Use the locked anonymous arena. The region's kind says
			// so, and the profile proves the arena it actually got.
		default:
			return fail(ErrUnavailable, err)
		}
	}

	p, err := unix.MmapPtr(-1, 0, r.data, uintptr(dataLen), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
	if err != nil {
		return fail(ErrUnavailable, err)
	}
	if p != r.data {
		return fail(ErrUnavailable, unix.EINVAL)
	}
	data := unsafe.Slice((*byte)(r.data), dataLen)
	if err := unix.Madvise(data, unix.MADV_DONTDUMP); err != nil {
		return fail(ErrUnavailable, err)
	}
	// MADV_WIPEONFORK exists since Linux 4.14; EINVAL means an older kernel,
	// where os/exec's clone+exec still never exposes the pages to a child.
	if err := unix.Madvise(data, unix.MADV_WIPEONFORK); err != nil && !errors.Is(err, unix.EINVAL) {
		return fail(ErrUnavailable, err)
	}
	if err := unix.Mlock(data); err != nil {
		return fail(classify(err), err)
	}
	r.kind = KindMlock
	return r, nil
}

// secretmemUnavailable reports whether memfd_secret's error means that the
// facility is not available to this process, so that the locked anonymous
// arena is the one to use: ENOSYS (a kernel without it, or one that cannot
// remove pages from the direct map), EPERM (a seccomp filter, as container
// runtimes install, refusing the call) and EINVAL (secretmem disabled).
// Any other error, such as EMFILE or ENOMEM, fails the arena.
func secretmemUnavailable(err error) bool {
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL)
}

// mapSecretmem sizes the secretmem file once, maps it shared over the middle
// of the reservation and closes the descriptor (the mapping keeps the file).
// It never calls mlock: secretmem pages are locked by the kernel and mlock on
// them fails by design.
func mapSecretmem(r *region, fd int) error {
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(r.size)); err != nil {
		return err
	}
	p, err := unix.MmapPtr(fd, 0, r.data, uintptr(r.size), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_SHARED|unix.MAP_FIXED)
	if err != nil {
		return err
	}
	if p != r.data {
		return unix.EINVAL
	}
	// Fault every page in now, so a shortage shows at start-up rather than as
	// a fault in the middle of a request. Secretmem refuses GUP, so
	// MADV_POPULATE_WRITE is no option: touch each page instead.
	pg := os.Getpagesize()
	data := unsafe.Slice((*byte)(r.data), r.size)
	for i := 0; i < len(data); i += pg {
		data[i] = 0
	}
	return nil
}

// classify maps the errno of a lock or a locked mapping to a sentinel: the
// memlock budget (EAGAIN, ENOMEM, EPERM without CAP_IPC_LOCK) is a limit, the
// rest means the facility is unavailable.
func classify(err error) error {
	switch {
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.ENOMEM), errors.Is(err, unix.EPERM):
		return ErrLockLimit
	}
	return ErrUnavailable
}

// unmap releases the whole reservation: guards, data and the lock on it.
func (r *region) unmap() error {
	return unix.MunmapPtr(r.base, uintptr(r.total))
}
