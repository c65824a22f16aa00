//go:build linux && (amd64 || arm64 || riscv64)

package arena

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The test binary re-executes itself as a helper process when helperEnv names
// a mode; the canary travels in canaryEnv.
const (
	helperEnv = "PRIVACYCUT_ARENA_TEST_HELPER"
	canaryEnv = "PRIVACYCUT_ARENA_TEST_CANARY"
	kindEnv   = "PRIVACYCUT_ARENA_TEST_FALLBACK"
)

// runHelper is the helper process's main. It returns an exit status, or
// never returns because it panics on purpose.
func runHelper(mode string) int {
	canary := os.Getenv(canaryEnv)
	switch mode {
	case "panic-secret":
		a, err := New(4096, Options{ForceFallback: os.Getenv(kindEnv) == "1"})
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 3
		}
		s, err := a.Alloc(len(canary))
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 3
		}
		if err := s.Fill(func(d []byte) error { copy(d, canary); return nil }); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 3
		}
		done := make(chan struct{})
		go holdSecretAndPanic(s, done)
		<-done
		return 0
	case "panic-byvalue":
		var v [40]byte
		copy(v[:], canary)
		done := make(chan struct{})
		go holdValueAndPanic(v, done)
		<-done
		return 0
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode")
	return 2
}

// holdSecretAndPanic panics inside Reveal, while the secret is open.
//
//go:noinline
func holdSecretAndPanic(s *Secret, done chan struct{}) {
	_ = s.Reveal(func(b []byte) error {
		if len(b) > 0 {
			panic("helper: deliberate panic while revealing a secret")
		}
		return nil
	})
	close(done)
}

// holdValueAndPanic is the negative control: the bytes are an argument by
// value, which tracebacks print.
//
//go:noinline
func holdValueAndPanic(v [40]byte, done chan struct{}) {
	if v[0] != 0 {
		panic("helper: deliberate panic holding bytes by value")
	}
	close(done)
}

// TestPanicTraceback is M5: a goroutine holding a *Secret panics with
// GOTRACEBACK=all; the child's stderr holds the traceback but no canary form.
// The control child, holding the same bytes by value, must leak them, which
// shows the detector and the traceback setting work.
func TestPanicTraceback(t *testing.T) {
	run := func(mode string, fallback bool) []byte {
		t.Helper()
		canary := "M5-CANARY-" + randHex(t, 30)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		fb := "0"
		if fallback {
			fb = "1"
		}
		cmd.Env = append(childEnv(),
			helperEnv+"="+mode, canaryEnv+"="+canary, kindEnv+"="+fb, "GOTRACEBACK=all")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("%s: child exit = %v, want status 2 from a panic; stderr:\n%s", mode, err, stderr.String())
		}
		out := stderr.Bytes()
		if !bytes.Contains(out, []byte("deliberate panic")) || !bytes.Contains(out, []byte("goroutine ")) {
			t.Fatalf("%s: stderr is not a traceback:\n%s", mode, out)
		}
		if forms := leakForms(stdout.Bytes(), []byte(canary)); len(forms) != 0 {
			t.Errorf("%s: canary on stdout as %v", mode, forms)
		}
		return append(out, []byte("\x00"+canary)...)
	}
	split := func(b []byte) ([]byte, []byte) {
		i := bytes.LastIndexByte(b, 0)
		return b[:i], b[i+1:]
	}

	ctlOut, ctlCanary := split(run("panic-byvalue", false))
	if forms := leakForms(ctlOut, ctlCanary); len(forms) == 0 {
		t.Fatalf("control: the by-value traceback shows no canary; the check cannot fail:\n%s", ctlOut)
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			if !k.force && !haveMemfdSecret() {
				t.Skip("memfd_secret(2) not available on this kernel")
			}
			out, canary := split(run("panic-secret", k.force))
			if !bytes.Contains(out, []byte("holdSecretAndPanic")) {
				t.Errorf("the traceback does not show the goroutine holding the secret:\n%s", out)
			}
			if forms := leakForms(out, canary); len(forms) != 0 {
				t.Errorf("canary in the panic traceback as %v:\n%s", forms, out)
			}
		})
	}
}

// childEnv is this process's environment for a helper: without GOTRACEBACK
// (each test sets its own), and with the race runtime's one-second exit
// delay turned off (a no-op in builds without -race).
func childEnv() []string {
	env := withoutEnv(withoutEnv(os.Environ(), "GOTRACEBACK"), "GORACE")
	return append(env, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
}

func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// mlockallNames are the identifiers a call to mlockall(2) needs in Go.
var mlockallNames = []string{"Mlock" + "all", "MCL_" + "FUTURE", "MCL_" + "CURRENT", "SYS_" + "MLOCKALL"}

// mlockallUses reports the lines of src that use one of mlockallNames as an
// identifier (comments and strings do not count). A file that does not parse
// falls back to a plain byte search, so a half-edited file cannot hide a call.
func mlockallUses(name string, src []byte) []string {
	var hits []string
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		for _, w := range mlockallNames {
			if i := bytes.Index(src, []byte(w)); i >= 0 {
				hits = append(hits, fmt.Sprintf("%s:%d: %s (file does not parse)", name, bytes.Count(src[:i], []byte("\n"))+1, w))
			}
		}
		return hits
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && slices.Contains(mlockallNames, id.Name) {
			hits = append(hits, fmt.Sprintf("%s: %s", fset.Position(id.Pos()), id.Name))
		}
		return true
	})
	return hits
}

// TestNoMlockall is P6 (source half): no Go file of the repository uses
// mlockall. This file names it only inside strings, and is skipped anyway.
func TestNoMlockall(t *testing.T) {
	// Control: the detector sees a real call and ignores comments and strings.
	bad := []byte("package p\n\nimport \"golang.org/x/sys/unix\"\n\n// unix.Mlock" + "all is fine here\nvar s = \"Mlock" + "all\"\n\nfunc f() error { return unix.Mlock" + "all(unix.MCL_" + "CURRENT | unix.MCL_" + "FUTURE) }\n")
	if got := mlockallUses("p.go", bad); len(got) != 3 {
		t.Fatalf("detector on a planted call found %v, want 3 uses on line 8", got)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	self, err := filepath.Abs("helper_test.go")
	if err != nil {
		t.Fatal(err)
	}
	scanned := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || path == self {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned++
		for _, h := range mlockallUses(path, b) {
			t.Errorf("mlockall: %s", h)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 5 {
		t.Fatalf("scanned %d Go files under %s; the walk found nothing to check", scanned, root)
	}
	t.Logf("scanned %d Go files under %s", scanned, root)
}

// TestVmLckBounded is P6 (runtime half): creating an arena raises VmLck by the
// arena's size and nothing more, and the total stays far below the 100 MB a
// mlockall of the Go runtime would lock.
func TestVmLckBounded(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			if !k.force && !haveMemfdSecret() {
				t.Skip("memfd_secret(2) not available on this kernel")
			}
			before := vmLck(t)
			const size = 1 << 20
			a, err := New(size, Options{ForceFallback: k.force})
			if err != nil {
				t.Fatal(err)
			}
			after := vmLck(t)
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			closed := vmLck(t)
			t.Logf("kind %s: VmLck %d kB before, %d kB with a %d-byte arena, %d kB after Close", k.want, before/1024, after/1024, size, closed/1024)
			if after-before != size {
				t.Errorf("VmLck grew by %d bytes, want exactly the arena size %d", after-before, size)
			}
			if after >= 100<<20 {
				t.Errorf("VmLck = %d bytes, want < 100 MB", after)
			}
			if closed != before {
				t.Errorf("VmLck after Close = %d, want %d (unlocked with the unmap)", closed, before)
			}
		})
	}
}

// vmLck reads VmLck from /proc/self/status, in bytes.
func vmLck(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmLck:"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				t.Fatalf("unexpected VmLck line %q", line)
			}
			n, err := strconv.Atoi(f[0])
			if err != nil {
				t.Fatal(err)
			}
			return n * 1024
		}
	}
	t.Fatal("no VmLck in /proc/self/status")
	return 0
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
}
