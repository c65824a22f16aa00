package vaultapi

import "errors"

// Sentinels of the vault's storage. ErrStorageLow comes with the refusal
// code LIMIT_EXCEEDED and, in Field, the directory that is short of space
// ("state_dir" or "key_dir"); ErrStorageFailed has no code.
var (
	// ErrStorageLow: a directory of the vault has less free space (or
	// fewer free inodes) than the vault's floor, or the file system
	// reported it full. The vault refuses new grants, rotations and
	// restores; existing leases keep working.
	ErrStorageLow = errors.New("free space below the vault's floor")
	// ErrStorageFailed: the state directory was removed or replaced, or a
	// directory of the vault reported an I/O error; vaultd stops.
	ErrStorageFailed = errors.New("vault storage failed; vaultd is stopping")
)

// Storage is what Status reports about the vault's disk: the free space
// of the file systems holding the state and key directories against the
// floor below which grants are refused.
type Storage struct {
	// Floor is the free-space floor in bytes; 0 when the watermark is
	// disabled.
	Floor int64 `json:"floor_bytes"`
	// State and Key are the two directories' file systems.
	State DirSpace `json:"state_dir"`
	Key   DirSpace `json:"key_dir"`
	// Low: either directory is below the floor, so grants are refused.
	Low bool `json:"below_floor"`
}

// DirSpace is one directory's file system, as statfs(2) reports it to an
// unprivileged user (f_bavail, f_ffree).
type DirSpace struct {
	FreeBytes  int64  `json:"free_bytes"`
	TotalBytes int64  `json:"total_bytes"`
	FreeInodes int64  `json:"free_inodes"` // -1 when the file system does not count inodes
	Low        bool   `json:"below_floor"`
	Error      string `json:"error,omitempty"` // why statfs failed (an errno name), "" when it did not
}
