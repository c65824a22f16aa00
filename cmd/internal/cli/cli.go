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
	"sort"
	"strings"

	"github.com/privacycut/privacycut/internal/bigbuf"
)

// Exit codes (SPEC §12).
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
}

// OSEnv is the environment of the real process.
func OSEnv() Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, c *Cmd, args []string) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// Cmd is one invocation of cut.
type Cmd struct {
	Env
	name    string   // "cut check", for messages
	frees   []func() // of the buffers from c.buffer, called when Run returns
	closers []func() // of the command's pipelines, called before the frees
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
	c := &Cmd{Env: env, name: "cut"}
	defer c.release()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		c.usage()
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		c.errorf("unknown command %q", args[0])
		c.usage()
		return ExitUsage
	}
	c.name = "cut " + cmd.name
	err := cmd.run(ctx, c, args[1:])
	return c.exit(ctx, err)
}

func (c *Cmd) usage() {
	fmt.Fprintln(c.Stderr, "usage: cut <command> [flags] [args]")
	fmt.Fprintln(c.Stderr, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(c.Stderr, "  %-10s %s\n", n, commands[n].summary)
	}
}

func (c *Cmd) errorf(format string, args ...any) {
	fmt.Fprintf(c.Stderr, "cut: error: "+format+"\n", args...)
}

func (c *Cmd) hintf(format string, args ...any) {
	fmt.Fprintf(c.Stderr, "cut: hint: "+format+"\n", args...)
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
	case errors.As(err, &ue):
		c.errorf("%s: %s", c.name, ue.msg)
		return ExitUsage
	case errors.Is(err, flag.ErrHelp):
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
	c.errorf("%s: %v", c.name, err)
	return ExitError
}

// flags returns a FlagSet that reports to stderr and never exits.
func (c *Cmd) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	return fs
}

// parse parses flags, allowing them to follow positional arguments
// (`cut check PROJ --json`), and returns the positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{err.Error()}
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
