package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"sort"
	"strings"

	"github.com/privacycut/privacycut/cmd/internal/flaghelp"
)

// Command is one command of cut as its help, manual and completion
// describe it.
type Command struct {
	Name     string // "check", "vault status"
	Synopsis string // what follows "cut NAME"
	Summary  string
	About    string
	Flags    []flaghelp.Flag
	Group    bool // a group of commands ("vault"), which has no flags
}

// errDescribed ends a command run only to describe it, at its flag parse.
var errDescribed = errors.New("described")

// Commands returns every command and group of cut, sorted by name, each
// leaf with its flags: the command table the help, the manual and the
// completion scripts are made from. A leaf's flags are those it parses: it
// is run with an environment of its own up to its flag parse, which
// stops it before it reads, writes or dials anything.
func Commands() ([]Command, error) {
	var out []Command
	for _, g := range groups {
		out = append(out, Command{Name: g.name, Summary: g.summary, Group: true})
	}
	for _, cmd := range commands {
		fs, err := flagSetOf(cmd)
		if err != nil {
			return nil, err
		}
		out = append(out, Command{Name: cmd.name, Synopsis: cmd.synopsis, Summary: cmd.summary, About: cmd.about, Flags: flaghelp.List(fs)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// flagSetOf runs cmd up to its flag parse and returns the FlagSet it
// parses.
func flagSetOf(cmd *command) (*flag.FlagSet, error) {
	var fs *flag.FlagSet
	c := &Cmd{Env: Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard,
		Getenv: func(string) string { return "" }}, prog: "cut", describe: &fs}
	defer c.release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // nothing a command starts before its parse may run on
	err := c.runCommand(ctx, cmd, nil)
	if !errors.Is(err, errDescribed) || fs == nil {
		return nil, errors.New("cut " + cmd.name + " does not parse its flags first")
	}
	return fs, nil
}
