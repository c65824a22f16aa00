//go:build !linux

package verifier

import (
	"errors"
	"os"
)

const attachSupported = false

var errAttachment = errors.New("verifier: attachments are not supported on this system")

func makeAttachment(inputs [nInputs][]byte) (*os.File, error) { return nil, errAttachment }

func newAttachment() (*os.File, error) { return nil, errAttachment }

func fillAttachment(f *os.File, inputs [nInputs][]byte) error { return errAttachment }

func openAttachment(fd int, sizes []uint64) ([]byte, func(), error) {
	return nil, nil, errAttachment
}
