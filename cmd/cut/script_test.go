package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/privacycut/privacycut/cmd/internal/cli"
)

// TestMain lets the test binary run as `cut` inside the transcripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"cut": func() { os.Exit(cli.Main(context.Background(), append([]string{"cut"}, os.Args[1:]...))) },
		// The same program installed under the name make install gives it.
		"privacycut": func() { os.Exit(cli.Main(context.Background(), append([]string{"privacycut"}, os.Args[1:]...))) },
	})
}

// TestScripts runs the transcripts in testdata/script: each pins what a
// user sees (stdout, stderr, exit code) for one situation. The examples
// directory is copied into each script's work directory as examples/.
func TestScripts(t *testing.T) {
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			e.Setenv("EXAMPLES", examples)
			e.Setenv("PRIVACYCUT_VAULT", "")
			return nil
		},
		RequireExplicitExec: true,
		Cmds:                map[string]func(ts *testscript.TestScript, neg bool, args []string){"exits": exits},
	})
}

// exits N PROG ARGS... runs PROG as exec does and requires exit code N, so
// a transcript pins the code of each cause, not only success or failure.
// stdout and stderr are kept for the following stdout and stderr commands.
func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits N program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %q is not an exit code", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("exit code %d, want %d", got, want)
	}
}
