//go:build linux

package plugin

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// The seals an attachment must carry before the plugin trusts it: its size
// and contents can no longer change, and no seal can be removed.
const attachSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL

// attachSupported reports whether inputs can be handed over in a memfd.
const attachSupported = true

// makeAttachment writes the inputs, concatenated, into a new memfd and seals
// it. The plugin refuses it unless it is sealed and of the declared size,
// and only then reads or maps it (openAttachment); what it verifies can then
// be neither changed nor copied through the gRPC transport.
func makeAttachment(inputs [nInputs][]byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("privacycut-verifier-inputs", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "privacycut-verifier-inputs")
	for _, in := range inputs {
		if _, err := f.Write(in); err != nil {
			f.Close()
			return nil, err
		}
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, attachSeals); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

var errAttachment = errors.New("verifier: attachment is missing, unsealed or of the wrong size")

// newAttachChannel returns the two ends of the channel that carries an
// attachment to a plugin: a SOCK_SEQPACKET socket pair. The plugin inherits
// child at exec. Until the plugin has hardened itself, another process of
// the same uid may open its /proc/<pid>/fd entries; a memfd opened there
// would stay readable, a socket cannot be opened there at all. The memfd
// itself crosses the channel only once the plugin has started (Pending.Verify).
func newAttachChannel() (host, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "privacycut-verifier-channel"), os.NewFile(uintptr(fds[1]), "privacycut-verifier-channel"), nil
}

// sendAttachment passes the sealed memfd f over the host end of the channel
// (SCM_RIGHTS); the caller may close f afterwards.
func sendAttachment(ch, f *os.File) error {
	return unix.Sendmsg(int(ch.Fd()), []byte{'a'}, unix.UnixRights(int(f.Fd())), nil, 0)
}

// receiveAttachment takes the one memfd waiting on the channel sock, without
// blocking (the host sends it before it asks for the verification), opens it
// with openAttachment and closes the descriptor: the copy or the mapping is
// what stays.
// Anything but exactly one descriptor in one one-byte message is refused,
// and every descriptor received is closed.
func receiveAttachment(sock int, sizes []uint64) ([]byte, func(), error) {
	buf := make([]byte, 2)
	oob := make([]byte, unix.CmsgSpace(4*2))
	n, oobn, flags, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, nil, errAttachment
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for i := range msgs {
			if r, err := unix.ParseUnixRights(&msgs[i]); err == nil {
				fds = append(fds, r...)
			}
		}
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	if n != 1 || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 || len(fds) != 1 {
		return nil, nil, errAttachment
	}
	return openAttachment(fds[0], sizes)
}

// reuseMax is the largest attachment openAttachment reads into the
// plugin's reusable buffer rather than maps.
const reuseMax = 4 << 20

// reused is the plugin's reusable attachment buffer, held from an
// attachment's read until its release, which clears it. A warm plugin's
// requests come one at a time, each into the same pages, already faulted
// in: a mapping costs a populate and, at its unmap, a TLB shootdown on
// every CPU the plugin's threads ran on, every request. An attachment that
// arrives while the buffer is held, or is larger than reuseMax, is mapped.
var reused struct {
	sync.Mutex
	b []byte
}

// openAttachment checks that the memfd at fd is sealed and holds exactly the
// declared sizes, then reads it into the reusable buffer (up to reuseMax,
// when the buffer is free) or maps it read-only. The returned function
// clears and frees the buffer, or unmaps the mapping; it may be called more
// than once.
func openAttachment(fd int, sizes []uint64) ([]byte, func(), error) {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil || seals&attachSeals != attachSeals {
		return nil, nil, errAttachment
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, nil, errAttachment
	}
	var total uint64
	for _, n := range sizes {
		if n > MaxInputBytes || total+n < total {
			return nil, nil, ErrTooLarge
		}
		total += n
	}
	if uint64(st.Size) != total {
		return nil, nil, errAttachment
	}
	if total == 0 {
		return []byte{}, func() {}, nil
	}
	if total <= reuseMax && reused.TryLock() {
		return readAttachment(fd, int(total))
	}
	b, err := unix.Mmap(fd, 0, int(total), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, nil, errAttachment
	}
	var once sync.Once
	return b, func() { once.Do(func() { unix.Munmap(b) }) }, nil
}

// readAttachment reads the n bytes of the sealed memfd at fd into the
// reusable buffer, whose lock the caller holds; the returned function
// clears the bytes read and unlocks it.
func readAttachment(fd, n int) ([]byte, func(), error) {
	if cap(reused.b) < n {
		reused.b = make([]byte, n) // the old buffer was cleared at its release
	}
	b := reused.b[:n]
	var once sync.Once
	release := func() {
		once.Do(func() {
			clear(b)
			reused.Unlock()
		})
	}
	for off := 0; off < n; {
		m, err := unix.Pread(fd, b[off:], int64(off))
		if err == unix.EINTR {
			continue
		}
		if err != nil || m <= 0 {
			release()
			return nil, nil, errAttachment
		}
		off += m
	}
	return b, release, nil
}
