package rpc

import (
	"github.com/privacycut/privacycut/vault/internal/vaultpb"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// maxStorageError bounds the statfs error text a client accepts (an errno
// name).
const maxStorageError = 32

// StorageToPB is the wire form of a Status's storage figures.
func StorageToPB(s vaultapi.Storage) *vaultpb.StorageSpace {
	dir := func(d vaultapi.DirSpace) *vaultpb.DirSpace {
		return &vaultpb.DirSpace{FreeBytes: d.FreeBytes, TotalBytes: d.TotalBytes, FreeInodes: d.FreeInodes,
			BelowFloor: d.Low, Error: d.Error}
	}
	return &vaultpb.StorageSpace{FloorBytes: s.Floor, StateDir: dir(s.State), KeyDir: dir(s.Key), BelowFloor: s.Low}
}

// StorageFromPB rebuilds the storage figures; a missing message (a vaultd
// that does not report them) is the zero Storage. An error text that is
// not a short printable word is dropped.
func StorageFromPB(p *vaultpb.StorageSpace) vaultapi.Storage {
	if p == nil {
		return vaultapi.Storage{}
	}
	dir := func(d *vaultpb.DirSpace) vaultapi.DirSpace {
		if d == nil {
			return vaultapi.DirSpace{}
		}
		out := vaultapi.DirSpace{FreeBytes: d.FreeBytes, TotalBytes: d.TotalBytes, FreeInodes: d.FreeInodes, Low: d.BelowFloor}
		if printable(d.Error, maxStorageError) {
			out.Error = d.Error
		}
		return out
	}
	return vaultapi.Storage{Floor: p.FloorBytes, State: dir(p.StateDir), Key: dir(p.KeyDir), Low: p.BelowFloor}
}
