//go:build !linux

package bigbuf

func mapBuffer(int) ([]byte, bool) { return nil, false }

func unmapBuffer([]byte) {}
