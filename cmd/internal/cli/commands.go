package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/privacycut/privacycut/cmd/internal/flaghelp"
)

// command is one command of cut: a leaf ("check", "vault status") that
// runs, or a group ("vault") whose leaves are named by its next word.
type command struct {
	name     string // "check", "vault status"
	synopsis string // what follows "cut NAME" in a usage line, e.g. "--vocab V [--json] PROJ"
	summary  string // one line, for listings
	about    string // a paragraph for -h, optional
	run      func(ctx context.Context, c *Cmd, args []string) error
}

var (
	commands = map[string]*command{} // leaves, by full name
	groups   = map[string]*command{} // groups, by name (no run)
)

// register adds leaf commands.
func register(cmds ...*command) {
	for _, cmd := range cmds {
		commands[cmd.name] = cmd
	}
}

// registerGroup adds a group of leaves ("vault" for "vault status", …).
func registerGroup(name, summary string) {
	groups[name] = &command{name: name, summary: summary}
}

// usageLine is "usage: PROG NAME SYNOPSIS".
func (cmd *command) usageLine(prog string) string {
	return "usage: " + cmd.synopsisLine(prog)
}

// synopsisLine is "PROG NAME SYNOPSIS".
func (cmd *command) synopsisLine(prog string) string {
	return strings.TrimSpace(prog + " " + cmd.name + " " + cmd.synopsis)
}

// leaves returns the leaves of group name ("" for the top level: every
// top-level leaf and group), sorted.
func leaves(name string) []*command {
	var out []*command
	for n, cmd := range commands {
		if g, _, ok := strings.Cut(n, " "); ok && g == name {
			out = append(out, cmd)
		} else if !ok && name == "" {
			out = append(out, cmd)
		}
	}
	if name == "" {
		for _, g := range groups {
			out = append(out, g)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// dispatch finds the command args name and runs it.
func (c *Cmd) dispatch(ctx context.Context, args []string) error {
	word := args[0]
	if cmd, ok := commands[word]; ok {
		return c.runCommand(ctx, cmd, args[1:])
	}
	g, ok := groups[word]
	if !ok {
		c.errorf("unknown command %q", word)
		c.hintf("run %s --help for the list of commands", c.prog)
		return errUsageShown
	}
	if len(args) == 1 {
		c.printGroup(c.Stderr, g)
		return errUsageShown
	}
	if isHelp(args[1]) {
		c.printGroup(c.Stdout, g)
		return nil
	}
	cmd, ok := commands[word+" "+args[1]]
	if !ok {
		c.errorf("unknown %s command %q", word, args[1])
		c.printGroup(c.Stderr, g)
		return errUsageShown
	}
	return c.runCommand(ctx, cmd, args[2:])
}

func (c *Cmd) runCommand(ctx context.Context, cmd *command, args []string) error {
	c.name, c.cmd = c.prog+" "+cmd.name, cmd
	return cmd.run(ctx, c, args)
}

// errUsageShown: the usage has been printed; exit 2 without another
// message.
var errUsageShown = errors.New("usage shown")

// errHelpShown: help was asked for and printed on stdout; exit 0.
var errHelpShown = errors.New("help shown")

// about is the paragraph that describes cut in its help and manual.
const about = "cut cuts private material out of a model input before it leaves the host: a " +
	"censor and an independent verifier, a seal and an egress gate, and a vault for " +
	"reversible cuts."

// printTop prints the list of commands.
func (c *Cmd) printTop(w io.Writer) {
	fmt.Fprintf(w, "usage: %s <command> [flags] [args]\n", c.prog)
	fmt.Fprintf(w, "       %s --version\n\n", c.prog)
	fmt.Fprintln(w, flaghelp.Wrap(about+" Run "+c.prog+" <command> -h for a command's synopsis and flags.", 80))
	fmt.Fprintln(w, "")
	fmt.Fprintln(w, "commands:")
	for _, cmd := range leaves("") {
		fmt.Fprintf(w, "  %-11s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintln(w, "")
	fmt.Fprintln(w, "exit status: 0 ok, 1 operational error, 2 usage, 3 refused by policy, 4 verification failed")
}

// printGroup prints a group's commands.
func (c *Cmd) printGroup(w io.Writer, g *command) {
	fmt.Fprintf(w, "usage: %s %s <command> [flags] [args]\n\n%s\n\ncommands:\n", c.prog, g.name, g.summary)
	for _, cmd := range leaves(g.name) {
		fmt.Fprintf(w, "  %s\n      %s\n", cmd.synopsisLine(c.prog), cmd.summary)
	}
	fmt.Fprintf(w, "\nRun %s %s <command> -h for a command's flags.\n", c.prog, g.name)
}

// printHelp prints the current command's usage line, description and
// flags on stdout.
func (c *Cmd) printHelp(fs *flag.FlagSet) {
	w := c.Stdout
	if c.cmd != nil {
		fmt.Fprintf(w, "%s\n\n%s\n", c.cmd.usageLine(c.prog), c.cmd.summary)
		if c.cmd.about != "" {
			fmt.Fprintf(w, "\n%s\n", c.cmd.about)
		}
	}
	if fl := flaghelp.List(fs); len(fl) > 0 {
		fmt.Fprintln(w, "\nflags:")
		for _, f := range fl {
			fmt.Fprintf(w, "  %s\n", f.Spec())
			fmt.Fprintf(w, "%s\n", flaghelp.Indent(flaghelp.Wrap(f.Help(), 72), "        "))
		}
	}
}

// usage returns the usage error of the current command: its usage line,
// and how to get its help.
func (c *Cmd) usage() error {
	if c.cmd == nil {
		return errUsageShown
	}
	return &usageError{c.cmd.usageLine(c.prog) + "\n(" + c.name + " -h for its flags)"}
}
