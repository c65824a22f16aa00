//go:build !linux

package gateway

import (
	"errors"
	"net"
)

// peerUID is unsupported here: every unix peer is refused.
func peerUID(net.Conn) (uint32, error) {
	return 0, errors.New("gateway: peer credentials are not supported on this system")
}
