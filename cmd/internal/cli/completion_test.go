package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// completionScript runs cut completion SHELL as prog.
func completionScript(t *testing.T, prog, shell string) string {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(t.Context(), []string{"completion", shell}, Env{Stdout: &out, Stderr: &errb, Prog: prog})
	if code != ExitOK || errb.Len() != 0 {
		t.Fatalf("completion %s: exit %d: %s", shell, code, errb.String())
	}
	return out.String()
}

// TestBashCompletion: the bash script parses (bash -n) and, sourced,
// completes the commands, a group's commands, a leaf's flags, and leaves
// file names to bash after a flag's value.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	script := filepath.Join(t.TempDir(), "privacycut.bash")
	if err := os.WriteFile(script, []byte(completionScript(t, "privacycut", "bash")), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	complete := func(words ...string) []string {
		t.Helper()
		var b strings.Builder
		b.WriteString("source " + shellQuote(script) + "\nCOMP_WORDS=(")
		for _, w := range words {
			b.WriteString(shellQuote(w) + " ")
		}
		b.WriteString(")\nCOMP_CWORD=" + string(rune('0'+len(words)-1)) + "\n_privacycut\nprintf '%s\\n' \"${COMPREPLY[@]}\"\ncomplete -p privacycut\n")
		out, err := exec.Command(bash, "-c", b.String()).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", words, err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if last := lines[len(lines)-1]; last != "complete -o default -F _privacycut privacycut" {
			t.Fatalf("registration: %q", last)
		}
		return lines[:len(lines)-1]
	}
	cmds, err := Commands()
	if err != nil {
		t.Fatal(err)
	}
	top := strings.Join(complete("privacycut", ""), " ")
	for _, c := range cmds {
		if !strings.Contains(c.Name, " ") && !strings.Contains(" "+top+" ", " "+c.Name+" ") {
			t.Errorf("top level: no %s in %q", c.Name, top)
		}
	}
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"privacycut", "v"}, "vault verify vocab"},
		{[]string{"privacycut", "vault", ""}, "backup prove-erasure restore rotate status"},
		{[]string{"privacycut", "vault", "st"}, "status"},
		{[]string{"privacycut", "check", "--"}, "--help --json --max-parents --show-text --vocab"},
		{[]string{"privacycut", "check", "--vocab", "v.json", "--j"}, "--json"},
		{[]string{"privacycut", "plan", "init", "--exp"}, "--expires"},
		{[]string{"privacycut", "vault", "status", "--vault", "s", "--"}, "--help --json --vault"},
		{[]string{"privacycut", "completion", ""}, "bash zsh"},
		{[]string{"privacycut", "completion", "--"}, "--help"},
		{[]string{"privacycut", "check", "proj"}, ""},  // a file name: bash's default
		{[]string{"privacycut", "frobnicate", ""}, ""}, // not a command
		{[]string{"privacycut", "--version", "x"}, ""}, // top-level flags take nothing
	} {
		if got := strings.Join(complete(tc.words...), " "); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.words, got, tc.want)
		}
	}
}

// TestZshCompletion: the zsh script names every command and parses
// (zsh -n where zsh is installed).
func TestZshCompletion(t *testing.T) {
	s := completionScript(t, "cut", "zsh")
	if !strings.HasPrefix(s, "#compdef cut\n") || !strings.Contains(s, "compdef _cut cut") {
		t.Fatalf("header or registration missing:\n%s", s)
	}
	cmds, err := Commands()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		if !strings.Contains(s, shellQuote(c.Name)+")") {
			t.Errorf("no case for %s", c.Name)
		}
	}
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh not installed: the script is not parsed")
	}
	script := filepath.Join(t.TempDir(), "_cut")
	if err := os.WriteFile(script, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(zsh, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, out)
	}
	// Sourced with stand-ins for compdef, compadd and _files, the function
	// offers what the words before the cursor call for.
	prog := `compdef() { :; }
source ` + shellQuote(script) + `
compadd() { shift; local a=$1; print -r -- "${(P@)a}"; }
_files() { print FILES; }
t() { words=("$@"); CURRENT=$#words; PREFIX=${words[-1]}; _cut; }
t cut ""; t cut vault ""; t cut check --j; t cut check proj; t cut frob ""; t cut completion ""
`
	out, err := exec.Command(zsh, "-c", prog).CombinedOutput()
	if err != nil {
		t.Fatalf("zsh: %v\n%s", err, out)
	}
	var top []string
	for _, c := range cmds {
		if !strings.Contains(c.Name, " ") {
			top = append(top, c.Name)
		}
	}
	want := strings.Join(top, " ") + " help --help --version\n" +
		"backup prove-erasure restore rotate status\n--help --json --max-parents --show-text --vocab\nFILES\nFILES\nbash zsh\n"
	if string(out) != want {
		t.Errorf("zsh completion:\n%s\nwant\n%s", out, want)
	}
}

// TestCompletionUsage: no shell, two, or an unknown one is a usage error
// that does not echo an argument that is not a plain word.
func TestCompletionUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"completion"}, "usage: cut completion bash|zsh"},
		{[]string{"completion", "bash", "zsh"}, "usage: cut completion bash|zsh"},
		{[]string{"completion", "fish"}, `unknown shell "fish": bash or zsh`},
		{[]string{"completion", "owner-secret value"}, `unknown shell "?": bash or zsh`},
	} {
		var out, errb bytes.Buffer
		code := Run(t.Context(), tc.args, Env{Stdout: &out, Stderr: &errb})
		if code != ExitUsage || out.Len() != 0 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: exit %d: %q %q", tc.args, code, out.String(), errb.String())
		}
		if strings.Contains(errb.String(), "owner-secret") {
			t.Errorf("%q: echoed: %s", tc.args, errb.String())
		}
	}
}
