//go:build linux

package verifier

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// The seals an attachment must carry before the plugin trusts it: its size
// and contents can no longer change, and no seal can be removed.
const attachSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL

// attachSupported reports whether inputs can be handed over in a memfd.
const attachSupported = true

// makeAttachment writes the inputs, concatenated, into a new memfd and seals
// it. The plugin maps it read-only; what it verifies can then be neither
// changed nor copied through the gRPC transport.
func makeAttachment(inputs [nInputs][]byte) (*os.File, error) {
	f, err := newAttachment()
	if err != nil {
		return nil, err
	}
	if err := fillAttachment(f, inputs); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// newAttachment creates the empty memfd of an attachment.
func newAttachment() (*os.File, error) {
	fd, err := unix.MemfdCreate("privacycut-verifier-inputs", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "privacycut-verifier-inputs"), nil
}

// fillAttachment writes the inputs, concatenated, into the memfd f and
// seals it. A plugin that holds f maps it only once asked to verify, and
// refuses it unless it is sealed and of the declared size.
func fillAttachment(f *os.File, inputs [nInputs][]byte) error {
	for _, in := range inputs {
		if _, err := f.Write(in); err != nil {
			return err
		}
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, attachSeals); err != nil {
		return err
	}
	_, err := f.Seek(0, 0)
	return err
}

var errAttachment = errors.New("verifier: attachment is missing, unsealed or of the wrong size")

// openAttachment maps the sealed memfd at fd read-only and checks that it
// holds exactly the declared sizes. The returned function unmaps it.
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
	b, err := unix.Mmap(fd, 0, int(total), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, nil, errAttachment
	}
	return b, func() { unix.Munmap(b) }, nil
}
