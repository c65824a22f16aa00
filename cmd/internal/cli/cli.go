// Package cli is the cut command. It is a value with injectable standard
// streams and environment so tests run it in-process; cmd/cut is a thin main.
//
// # Security properties
//
//   - Nothing the command prints, on stdout or stderr, contains input bytes of a
//     projection, except with check's --show-text, which prints the refused
//     text on the local terminal in human mode only (never with --json).
//   - Errors are classified into exit codes (0 ok, 1 operational error, 2 usage,
//     3 refused by policy, 4 verification failed) by type, not by message.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/privacycut/privacycut/cmd/internal/buildinfo"
	"github.com/privacycut/privacycut/internal/bigbuf"
)

// Exit codes (docs/FORMATS.md#exit-codes).
const (
	ExitOK       = 0
	ExitError    = 1
	ExitUsage    = 2
	ExitRefused  = 3
	ExitVerifyNo = 4
)

// Env is what the command sees of its process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Prog is the name the program was run as (the base of argv[0]),
	// used in usage lines, help and messages; "cut" when empty.
	Prog string
}

// OSEnv is the environment of the real process.
func OSEnv() Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

// Cmd is one invocation of cut.
type Cmd struct {
	Env
	prog    string   // "cut", or the name it was installed as ("privacycut")
	name    string   // "cut check" (prog and the command), for messages
	cmd     *command // the command being run
	sock    string   // the vault socket dialed, for a plugin verifier to dial too
	frees   []func() // of the buffers from c.buffer, called when Run returns
	closers []func() // of the command's pipelines, called before the frees
	// describe, when set, receives the FlagSet of the command at its
	// parse, which then returns errDescribed (Commands).
	describe **flag.FlagSet
}

// buffer returns a zeroed buffer of n bytes that stays valid until Run
// returns (bigbuf: a large one is mapped apart from the Go heap, so a fresh
// process does not fault it in 4 KiB at a time, and is unmapped then).
func (c *Cmd) buffer(n int) []byte {
	b, free := bigbuf.New(n)
	c.frees = append(c.frees, free)
	return b
}

// release closes the command's pipelines, which waits for the verifier
// plugins they are stopping, then frees the buffers from c.buffer. Nothing
// of the command may read the buffers after: every command has finished
// with its inputs, and waited for the goroutines that read them, before it
// returns.
func (c *Cmd) release() {
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
	c.closers = nil
	for _, free := range c.frees {
		free()
	}
	c.frees = nil
}

// Run runs cut with args (without the program name) and returns the exit code.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.Stdin == nil {
		env.Stdin = strings.NewReader("")
	}
	prog := env.Prog
	if prog == "" {
		prog = "cut"
	}
	c := &Cmd{Env: env, prog: prog, name: prog}
	defer c.release()
	switch {
	case len(args) == 0:
		c.printTop(c.Stderr)
		return ExitUsage
	case isHelp(args[0]) && len(args) == 1:
		c.printTop(c.Stdout)
		return ExitOK
	case args[0] == "help":
		// cut help COMMAND is cut COMMAND -h.
		return c.exit(ctx, c.dispatch(ctx, append(args[1:], "-h")))
	case args[0] == "--version" || args[0] == "-version" || args[0] == "version":
		if len(args) > 1 {
			c.errorf("%s takes no arguments", args[0])
			return ExitUsage
		}
		fmt.Fprintln(c.Stdout, buildinfo.Version(c.prog))
		return ExitOK
	}
	return c.exit(ctx, c.dispatch(ctx, args))
}

func (c *Cmd) errorf(format string, args ...any) {
	fmt.Fprintf(c.Stderr, c.prog+": error: "+format+"\n", args...)
}

func (c *Cmd) hintf(format string, args ...any) {
	fmt.Fprintf(c.Stderr, c.prog+": hint: "+format+"\n", args...)
}

// canonical is the command's name as the journal records it ("cut
// check"), whatever name the program was installed under.
func (c *Cmd) canonical() string {
	if c.cmd == nil {
		return "cut"
	}
	return "cut " + c.cmd.name
}

// Typed errors decide the exit code.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// isHelp reports whether a command word asks for help (-h, --help, help):
// a command with subcommands prints its usage for it, not "unknown command".
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// refusedError means the command refused its input by policy and has already
// printed the refusal document.
type refusedError struct{ n int }

func (e *refusedError) Error() string { return fmt.Sprintf("refused (%d reasons)", e.n) }

// verifyError means verification failed and the verdict was printed.
type verifyError struct{ claims []string }

func (e *verifyError) Error() string {
	return "verification failed: " + strings.Join(e.claims, ", ")
}

func (c *Cmd) exit(ctx context.Context, err error) int {
	if err == nil {
		return ExitOK
	}
	var ue *usageError
	var re *refusedError
	var ve *verifyError
	switch {
	case errors.Is(err, errHelpShown):
		return ExitOK
	case errors.Is(err, errUsageShown):
		return ExitUsage
	case errors.As(err, &ue):
		if strings.HasPrefix(ue.msg, "usage: ") {
			fmt.Fprintln(c.Stderr, ue.msg)
		} else {
			c.errorf("%s: %s", c.name, ue.msg)
		}
		return ExitUsage
	case errors.As(err, &re):
		return ExitRefused
	case errors.As(err, &ve):
		c.errorf("%s: %s", c.name, ve.Error())
		return ExitVerifyNo
	}
	if ctx.Err() != nil {
		// Whatever failed after the command was canceled failed for that.
		c.errorf("%s: interrupted", c.name)
		return ExitError
	}
	err = c.vaultDown(err)
	c.errorf("%s: %v", c.name, err)
	var vd *vaultDownError
	if errors.As(err, &vd) {
		sock := vd.sock
		if sock == "" {
			sock = "SOCK"
		}
		c.hintf("start it with: vaultd --state-dir DIR --key-dir DIR --socket %s (docs/OPERATIONS.md)", sock)
		if c.cmd != nil && c.cmd.name == "demo" && vd.sock != "" {
			c.hintf("without --vault and PRIVACYCUT_VAULT the demo runs a vault of its own")
		}
	}
	return ExitError
}

// flags returns the FlagSet of the current command. It prints nothing
// itself and never exits: parse prints help on stdout for -h, and a
// flag error as one usage line.
func (c *Cmd) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses flags, allowing them to follow positional arguments
// (`cut check PROJ --json`), and returns the positional arguments.
func (c *Cmd) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	if c.describe != nil {
		*c.describe = fs
		return nil, errDescribed
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.printHelp(fs)
				return nil, errHelpShown
			}
			return nil, &usageError{err.Error() + "\n(" + c.name + " -h for its flags)"}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
