// Package vaultdflags is vaultd's command line: its flags, synopsis and
// summary, shared by vaultd and by the generator of its manual page, so
// that vaultd -h and vaultd(8) cannot disagree.
package vaultdflags

import (
	"errors"
	"flag"
	"strconv"
	"strings"
	"time"

	"github.com/privacycut/privacycut/vault/service"
)

// Synopsis is what follows "vaultd" in its usage line.
const Synopsis = "--state-dir D --key-dir K --socket S [--station NAME] [--max-lease DUR] [--arena-size BYTES] [--allow-uid UID]... [--max-leases-per-uid N] [--max-erasure-proofs-per-uid N] [--min-free BYTES] [--stop-timeout DUR]"

// Summary is vaultd's one-line description.
const Summary = "privacycut's local vault: the pseudonym maps of reversible cuts in memory-locked memory, served over a unix socket"

// DefaultStopTimeout bounds a stop: well under systemd's default of 90 s
// before SIGKILL.
const DefaultStopTimeout = 20 * time.Second

// UIDList is the repeatable --allow-uid flag.
type UIDList []uint32

func (u *UIDList) String() string {
	s := make([]string, len(*u))
	for i, v := range *u {
		s[i] = strconv.FormatUint(uint64(v), 10)
	}
	return strings.Join(s, ",")
}

// Set adds one uid.
func (u *UIDList) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return errors.New("not a uid")
	}
	*u = append(*u, uint32(n))
	return nil
}

// Config is what vaultd's flags set.
type Config struct {
	StateDir, KeyDir, Socket, Station string
	MaxLease, StopTimeout             time.Duration
	ArenaSize, MaxLeases, MaxProofs   int
	Allow                             UIDList
	MinFree                           int64
	Help, Version                     bool
}

// Define defines vaultd's flags on fs and returns what they set.
func Define(fs *flag.FlagSet) *Config {
	c := &Config{}
	fs.StringVar(&c.StateDir, "state-dir", "", "Badger `directory` for leases and map ciphertext")
	fs.StringVar(&c.KeyDir, "key-dir", "", "key `directory` (epoch keys, wrapped data keys); never back it up")
	fs.StringVar(&c.Socket, "socket", "", "unix socket `path`; its directory is made 0700")
	fs.StringVar(&c.Station, "station", service.DefaultStation, "this vault's station `name`")
	fs.DurationVar(&c.MaxLease, "max-lease", service.DefaultMaxLease, "maximum lease `lifetime`")
	fs.IntVar(&c.ArenaSize, "arena-size", service.DefaultArenaSize, "secret arena size in `bytes` (within RLIMIT_MEMLOCK)")
	fs.Var(&c.Allow, "allow-uid", "`uid` allowed to connect (repeatable; default: vaultd's own uid)")
	fs.IntVar(&c.MaxLeases, "max-leases-per-uid", service.DefaultMaxLeasesPerPrincipal,
		"live (ACTIVE or CLAIMED) leases one peer uid may hold; one more grant is LIMIT_EXCEEDED")
	fs.IntVar(&c.MaxProofs, "max-erasure-proofs-per-uid", service.DefaultMaxScratchPerPrincipal,
		"erasure proofs (each a backup in memory and a scratch store) one peer uid may run at once; one more is LIMIT_EXCEEDED")
	fs.Int64Var(&c.MinFree, "min-free", service.DefaultMinFree, "free-space floor in `bytes` of the state and key directories' file systems: below it new grants, rotations and restores are refused (LIMIT_EXCEEDED) and a stop leaves Badger's log to replay instead of flushing it; 0 disables")
	fs.DurationVar(&c.StopTimeout, "stop-timeout", DefaultStopTimeout, "bound on a stop after SIGTERM or SIGINT (`duration`); past it, or at a second signal, vaultd exits 1 naming what had not closed")
	fs.BoolVar(&c.Help, "help", false, "print this help on stdout and exit 0 (also -h)")
	fs.BoolVar(&c.Version, "version", false, "print the version and exit 0")
	return c
}
