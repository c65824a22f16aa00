//go:build !linux

package plugin

import (
	"errors"
	"os"
)

const attachSupported = false

var errAttachment = errors.New("verifier: attachments are not supported on this system")

func makeAttachment(inputs [nInputs][]byte) (*os.File, error) { return nil, errAttachment }

func openAttachment(fd int, sizes []uint64) ([]byte, func(), error) {
	return nil, nil, errAttachment
}

func newAttachChannel() (host, child *os.File, err error) { return nil, nil, errAttachment }

func sendAttachment(ch, f *os.File) error { return errAttachment }

func receiveAttachment(sock int, sizes []uint64) ([]byte, func(), error) {
	return nil, nil, errAttachment
}
