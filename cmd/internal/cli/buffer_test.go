package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/internal/bigbuf"
)

// TestReadIntoCommandBuffer: a large file is read into a buffer of the
// command, which holds the file's bytes and is freed by release.
func TestReadIntoCommandBuffer(t *testing.T) {
	want := bytes.Repeat([]byte("0123456789abcdef"), (1<<20)/16+3)
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Cmd{Env: Env{Stdout: io.Discard, Stderr: io.Discard}}
	before := bigbuf.Live()
	got, over, err := readCapped(c, path, 2<<20)
	if err != nil || over || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, over %v, err %v", len(got), over, err)
	}
	if runtime.GOOS == "linux" && bigbuf.Live() != before+1 {
		t.Fatalf("%d buffers mapped, want %d", bigbuf.Live(), before+1)
	}
	if _, over, _ := readCapped(c, path, int64(len(want)-1)); !over {
		t.Fatal("a file over the cap was read")
	}
	c.release()
	if bigbuf.Live() != before {
		t.Fatalf("%d buffers mapped after release, want %d", bigbuf.Live(), before)
	}
	// Without a command the bytes come from the heap.
	if got, _, err := readCapped(nil, path, 2<<20); err != nil || !bytes.Equal(got, want) || bigbuf.Live() != before {
		t.Fatalf("read without a command: err %v, %d buffers mapped", err, bigbuf.Live())
	}
}

// TestRunReleasesBuffers: a prepare of a projection above bigbuf.Threshold,
// with the verifier in process (which maps its own buffers too), leaves no
// buffer mapped when Run returns.
func TestRunReleasesBuffers(t *testing.T) {
	e := newTestEnv(t)
	var texts []string
	for len(strings.Join(texts, "")) < 2*bigbuf.Threshold {
		texts = append(texts, strings.Repeat(okRecord, 200))
	}
	proj := e.write(t, "big.json", projection(texts...))
	plan := filepath.Join(e.dir, "plan.json")
	if code, _, errb := e.run(t, "plan", "init", "--vocab", e.vocab, "--consumer", "model:m", "--purpose", "p",
		"--target", "https://m.example/", "-o", plan, proj); code != ExitOK {
		t.Fatalf("plan init: exit %d: %s", code, errb)
	}
	before := bigbuf.Live()
	if code, _, errb := e.run(t, "prepare", "--vocab", e.vocab, "--plan", plan, "--verifier", "inprocess", proj); code != ExitOK {
		t.Fatalf("prepare: exit %d: %s", code, errb)
	}
	if bigbuf.Live() != before {
		t.Fatalf("%d buffers still mapped after Run, want %d", bigbuf.Live(), before)
	}
}

// TestRunStopsItsPlugin: the verifier plugin of a prepare is stopped while
// the bundle is written, and Run returns only once it has stopped and been
// waited for: no child process is left, after a pass and after a refusal.
func TestRunStopsItsPlugin(t *testing.T) {
	e, proj, plan := cutEnv(t, "https://model.example/v1/answer")
	before := liveChildren(t)
	if code, _, errb := e.run(t, "prepare", "--vocab", e.vocab, "--plan", plan, proj); code != ExitOK {
		t.Fatalf("prepare: exit %d: %s", code, errb)
	}
	if got := liveChildren(t); got != before {
		t.Fatalf("%d child processes after prepare, want %d", got, before)
	}
	e.write(t, "p.json", projection(strings.Replace(okRecord, "affected", "exploited", 1)))
	if code, _, errb := e.run(t, "prepare", "--vocab", e.vocab, "--plan", plan, proj); code != ExitRefused {
		t.Fatalf("refused prepare: exit %d: %s", code, errb)
	}
	if got := liveChildren(t); got != before {
		t.Fatalf("%d child processes after a refused prepare, want %d", got, before)
	}
}

// liveChildren counts this process's children, zombies included: a
// stopped plugin is a zombie until go-plugin has waited for it, which its
// stop does before it returns.
func liveChildren(t *testing.T) int { return len(childPIDs(t, os.Getpid(), true)) }

// childPIDs lists the children of parent, zombies only when asked.
func childPIDs(t *testing.T, parent int, zombies bool) []int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 2 && f[1] == strconv.Itoa(parent) && (zombies || f[0] != "Z") {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d))); err == nil {
				kids = append(kids, pid)
			}
		}
	}
	return kids
}
