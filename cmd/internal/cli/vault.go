package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

func init() {
	registerGroup("vault", "vaultd: status, backup, restore, rotate, prove-erasure")
	register(
		&command{name: "vault status", synopsis: "[--json] [--vault SOCK]", summary: "the vault's profile (VaultProfile@1), station, key epoch and leases", run: vaultStatus},
		&command{name: "vault backup", synopsis: "-o FILE [--json] [--vault SOCK]", summary: "back up leases and ciphertext (never keys)", run: vaultBackup},
		&command{name: "vault restore", synopsis: "[--json] [--vault SOCK] FILE", summary: "restore a backup into the vault", run: vaultRestore},
		&command{name: "vault rotate", synopsis: "[--json] [--vault SOCK]", summary: "rotate the key epoch: re-wrap live data keys, destroy the old epoch key", run: vaultRotate},
		&command{name: "vault prove-erasure", synopsis: "[--live LEASE] [--json] [--vault SOCK] BACKUP LEASE", summary: "show that a destroyed lease's map in a backup cannot be opened", run: vaultProve},
	)
}

// vaultFlags are the flags every vault and lease subcommand takes.
type vaultFlags struct {
	sock   *string
	asJSON *bool
}

func (c *Cmd) vaultFlagSet(name string) (*flag.FlagSet, vaultFlags) {
	fs := c.flags(name)
	return fs, vaultFlags{
		sock:   fs.String("vault", c.Getenv("PRIVACYCUT_VAULT"), "vaultd socket `path` (default $PRIVACYCUT_VAULT)"),
		asJSON: fs.Bool("json", false, "print one JSON document"),
	}
}

// dial connects to the vault named by --vault.
func (c *Cmd) dial(f vaultFlags) (*client.Client, error) { return c.dialVault(*f.sock) }

// vaultError turns a vault error into the command's result: a refusal code
// prints the refusal document of docs/FORMATS.md#refusal-document (part -1, kind "vault") and exits
// 3; anything else is an operational error (exit 1). Every command that talks
// to the vault reports its errors through it.
func (c *Cmd) vaultError(asJSON bool, err error) error {
	code := vaultapi.CodeOf(err)
	if code == "" {
		return c.vaultDown(err)
	}
	doc := receipts.RefusalDocument{Refused: true, EventID: receipts.NewEventID(),
		Reasons: []receipts.Refusal{{Code: code, Part: -1, Kind: "vault"}}}
	c.journal(doc.EventID, doc.Reasons)
	if asJSON {
		if perr := c.printJSON(doc); perr != nil {
			return perr
		}
	} else {
		fmt.Fprintf(c.Stdout, "refused: %s (event %s)\n", code, doc.EventID)
	}
	c.errorf("%s: %v", c.name, err)
	storageHint(c, err)
	return &refusedError{1}
}

// storageHint explains a vault refusal for lack of disk space.
func storageHint(c *Cmd, err error) {
	if !errors.Is(err, vaultapi.ErrStorageLow) {
		return
	}
	dir := "state or key directory"
	var ve *vaultapi.Error
	if errors.As(err, &ve) && ve.Field == "key_dir" {
		dir = "key directory"
	} else if errors.As(err, &ve) && ve.Field == "state_dir" {
		dir = "state directory"
	}
	c.hintf("the vault's %s has less free space than vaultd's floor (--min-free); existing leases still work. Free space there (cut vault status shows it against the floor), then try again", dir)
}

// vaultSocket is --vault, else $PRIVACYCUT_VAULT.
func (c *Cmd) vaultSocket(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return c.Getenv("PRIVACYCUT_VAULT")
}

// vaultDownError is the operational error (exit 1) of a command that needs
// vaultd and has none: no socket configured (sock empty), or a socket that
// does not answer. Its message names the socket and asks whether vaultd
// runs.
type vaultDownError struct {
	sock string // the socket path dialed; empty: none configured
	why  string // why it did not answer, without the path
}

func (e *vaultDownError) Error() string {
	if e.sock == "" {
		return "no vault configured: pass --vault SOCK or set PRIVACYCUT_VAULT to the socket vaultd listens on (is vaultd running?)"
	}
	return fmt.Sprintf("vault socket %s does not answer (%s): is vaultd running, and listening there?", e.sock, e.why)
}

// probeVault connects to sock once and hangs up: a socket that does not
// exist, or that nothing listens on, is a vaultDownError before the
// command starts its work.
func probeVault(sock string) error {
	conn, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		return &vaultDownError{sock: sock, why: dialReason(err)}
	}
	return conn.Close()
}

// dialReason names why a dial failed, from its errno: the net error's own
// text repeats the path.
func dialReason(err error) string {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return "no such file"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens on it"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return "permission denied"
	case errors.Is(err, syscall.ENOTDIR):
		return "a component of the path is not a directory"
	case errors.Is(err, syscall.ENOTSOCK), errors.Is(err, syscall.EPROTOTYPE):
		return "not a socket"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "timed out"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return "cannot connect"
}

// vaultDown turns a vault connection lost during a call into the command's
// vaultDownError, naming the socket; other errors pass through.
func (c *Cmd) vaultDown(err error) error {
	var vd *vaultDownError
	if c.sock != "" && errors.Is(err, vaultapi.ErrUnavailable) && !errors.As(err, &vd) {
		return &vaultDownError{sock: c.sock, why: "the connection failed"}
	}
	return err
}

// printPlainJSON prints v with encoding/json: VaultProfile@1 may carry a
// core limit of 2^64-1 ("unlimited"), which canonical JSON (I-JSON
// integers) cannot hold.
func (c *Cmd) printPlainJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = c.Stdout.Write(append(b, '\n'))
	return err
}

func vaultStatus(ctx context.Context, c *Cmd, args []string) error {
	fs, f := c.vaultFlagSet("vault status")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return c.usage()
	}
	cl, err := c.dial(f)
	if err != nil {
		return err
	}
	defer cl.Close()
	st, err := cl.Status(ctx)
	if err != nil {
		return c.vaultError(*f.asJSON, err)
	}
	if *f.asJSON {
		return c.printPlainJSON(statusOut{Profile: st.Profile, Storage: st.Storage})
	}
	p := st.Profile
	locked := "not locked"
	if p.Arena.Locked {
		locked = "locked"
	}
	fmt.Fprintf(c.Stdout, "profile: %s\n", p.Profile)
	fmt.Fprintf(c.Stdout, "arena: %s, %d bytes, %s\n", p.Arena.Kind, p.Arena.Bytes, locked)
	fmt.Fprintf(c.Stdout, "dumpable: %v, core limit: %d, traceback: %q, swap: %s\n", p.Dumpable, p.CoreLimit, p.Traceback, p.Swap)
	reasons := "none"
	if len(p.Reasons) > 0 {
		reasons = strings.Join(p.Reasons, ", ")
	}
	fmt.Fprintf(c.Stdout, "reasons: %s\n", reasons)
	for _, it := range p.Items {
		if !it.OK {
			fmt.Fprintf(c.Stdout, "  %s: %s\n", it.Name, it.Detail)
		}
	}
	if st.ArenaError != "" {
		fmt.Fprintf(c.Stdout, "arena error: %s\n", st.ArenaError)
	}
	fmt.Fprintf(c.Stdout, "station: %s, key epoch: %d, max lease: %s, pid: %d\n", st.Station, st.Epoch, st.MaxLease, p.PID)
	fmt.Fprintf(c.Stdout, "leases: %s\n", summary(st.Leases))
	printStorage(c, st.Storage)
	return nil
}

// statusOut is the --json output of cut vault status: VaultProfile@1 with
// the vault's storage figures beside its fields.
type statusOut struct {
	harden.Profile
	Storage vaultapi.Storage `json:"storage"`
}

// printStorage prints the free space of the vault's directories against
// its floor.
func printStorage(c *Cmd, s vaultapi.Storage) {
	floor := "none (watermark disabled)"
	if s.Floor > 0 {
		floor = fmt.Sprintf("%d bytes", s.Floor)
	}
	fmt.Fprintf(c.Stdout, "free-space floor: %s\n", floor)
	for _, d := range []struct {
		name string
		sp   vaultapi.DirSpace
	}{{"state dir", s.State}, {"key dir", s.Key}} {
		line := fmt.Sprintf("  %s: %d of %d bytes free", d.name, d.sp.FreeBytes, d.sp.TotalBytes)
		if d.sp.FreeInodes >= 0 {
			line += fmt.Sprintf(", %d inodes free", d.sp.FreeInodes)
		}
		if d.sp.Error != "" {
			line += " (statfs: " + d.sp.Error + ")"
		}
		if d.sp.Low {
			line += " — BELOW THE FLOOR: new grants are refused"
		}
		fmt.Fprintln(c.Stdout, line)
	}
}

// backupOut is the --json output of cut vault backup.
type backupOut struct {
	File   string `json:"file"`
	Leases int    `json:"leases"`
	Maps   int    `json:"maps"`
	Bytes  int64  `json:"bytes"`
}

func vaultBackup(ctx context.Context, c *Cmd, args []string) error {
	fs, f := c.vaultFlagSet("vault backup")
	out := fs.String("o", "", "write the backup to `file` (\"-\": stdout)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if *out == "" || len(pos) != 0 {
		return c.usage()
	}
	if *out == "-" && *f.asJSON {
		return usagef("-o - writes the backup to stdout; it cannot be combined with --json")
	}
	cl, err := c.dial(f)
	if err != nil {
		return err
	}
	defer cl.Close()
	var st vaultapi.BackupStats
	if *out == "-" {
		st, err = cl.Backup(ctx, c.Stdout)
	} else {
		st, err = writeFileAtomic(*out, func(w io.Writer) (vaultapi.BackupStats, error) { return cl.Backup(ctx, w) })
	}
	if err != nil {
		return c.vaultError(*f.asJSON, err)
	}
	switch {
	case *f.asJSON:
		return c.printJSON(backupOut{File: *out, Leases: st.Leases, Maps: st.Maps, Bytes: st.Bytes})
	case *out == "-":
		fmt.Fprintf(c.Stderr, "cut: backup: %d leases, %d maps, %d bytes\n", st.Leases, st.Maps, st.Bytes)
	default:
		fmt.Fprintf(c.Stdout, "backup: %d leases, %d maps, %d bytes written to %s\n", st.Leases, st.Maps, st.Bytes, *out)
	}
	return nil
}

// writeFileAtomic writes the file at path from fill, in full or not at all
// (outputFile, 0600): a failed or interrupted backup never leaves a partial
// file under the final name.
func writeFileAtomic(path string, fill func(io.Writer) (vaultapi.BackupStats, error)) (vaultapi.BackupStats, error) {
	o, err := createOutput(path, 0o600)
	if err != nil {
		return vaultapi.BackupStats{}, err
	}
	defer o.abort()
	st, err := fill(o)
	if err != nil {
		return st, err
	}
	return st, o.commit(nil)
}

// openInput opens a file argument, "-" meaning stdin.
func (c *Cmd) openInput(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(c.Stdin), nil
	}
	return os.Open(path)
}

func vaultRestore(ctx context.Context, c *Cmd, args []string) error {
	fs, f := c.vaultFlagSet("vault restore")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return c.usage()
	}
	in, err := c.openInput(pos[0])
	if err != nil {
		return err
	}
	defer in.Close()
	cl, err := c.dial(f)
	if err != nil {
		return err
	}
	defer cl.Close()
	st, err := cl.Restore(ctx, in)
	if err != nil {
		return c.vaultError(*f.asJSON, err)
	}
	if *f.asJSON {
		return c.printJSON(st)
	}
	fmt.Fprintf(c.Stdout, "restore: %d leases restored (%d with maps), %d already present\n", st.Restored, st.Maps, st.Skipped)
	return nil
}

// rotateOut is the --json output of cut vault rotate.
type rotateOut struct {
	From      uint64 `json:"from"`
	To        uint64 `json:"to"`
	Rewrapped int    `json:"rewrapped"`
	Dropped   int    `json:"dropped"`
}

func vaultRotate(ctx context.Context, c *Cmd, args []string) error {
	fs, f := c.vaultFlagSet("vault rotate")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return c.usage()
	}
	cl, err := c.dial(f)
	if err != nil {
		return err
	}
	defer cl.Close()
	r, err := cl.Rotate(ctx)
	if err != nil {
		return c.vaultError(*f.asJSON, err)
	}
	if *f.asJSON {
		return c.printJSON(rotateOut{From: r.From, To: r.To, Rewrapped: r.Rewrapped, Dropped: r.Dropped})
	}
	fmt.Fprintf(c.Stdout, "rotate: key epoch %d → %d, %d data keys re-wrapped, %d dropped\n", r.From, r.To, r.Rewrapped, r.Dropped)
	return nil
}

// errNotProven is prove-erasure's failure: the report was printed and it
// does not prove erasure (exit 4).
var errNotProven = &verifyError{claims: []string{"erasure"}}

func vaultProve(ctx context.Context, c *Cmd, args []string) error {
	fs, f := c.vaultFlagSet("vault prove-erasure")
	live := fs.String("live", "", "a live `lease` that must still decrypt (negative control)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return c.usage()
	}
	in, err := c.openInput(pos[0])
	if err != nil {
		return err
	}
	defer in.Close()
	cl, err := c.dial(f)
	if err != nil {
		return err
	}
	defer cl.Close()
	rep, err := cl.ProveErasure(ctx, in, pos[1], *live)
	if err != nil {
		return c.vaultError(*f.asJSON, err)
	}
	if *f.asJSON {
		if err := c.printJSON(rep); err != nil {
			return err
		}
	} else {
		if rep.BackupVerified {
			printProbe(c.Stdout, "destroyed", rep.Destroyed)
			if rep.Live != nil {
				printProbe(c.Stdout, "live", *rep.Live)
			}
		}
		verdict := "erasure proven"
		if !rep.Proven {
			verdict = "erasure NOT proven: " + rep.Reason
		}
		fmt.Fprintf(c.Stdout, "%s (key epoch %d)\n", verdict, rep.Epoch)
	}
	if !rep.Proven {
		return errNotProven
	}
	return nil
}

func printProbe(w io.Writer, role string, p vaultapi.Probe) {
	vault := p.VaultState
	if vault == "" {
		vault = "unknown"
	}
	key := "gone"
	if p.WrappedKey {
		key = "present"
	}
	switch {
	case !p.InBackup:
		fmt.Fprintf(w, "%s %s: not in the backup\n", role, p.Lease)
	case p.Decrypts:
		fmt.Fprintf(w, "%s %s (%s in the backup, %s in the vault, key %s): map decrypts, %d entries\n", role, p.Lease, p.State, vault, key, p.Entries)
	default:
		fmt.Fprintf(w, "%s %s (%s in the backup, %s in the vault, key %s): undecryptable, %s: %s\n", role, p.Lease, p.State, vault, key, p.Code, p.Reason)
	}
}
