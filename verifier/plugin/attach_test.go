//go:build linux

package plugin

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/privacycut/privacycut/verifier"
)

// TestRunAttached verifies through a one-shot plugin whose inputs arrive in
// a sealed memfd: the verdicts equal the in-process ones.
func TestRunAttached(t *testing.T) {
	exe := selfExe(t)
	vs := map[string]vector{}
	for _, v := range loadVectors(t) {
		vs[v.Name] = v
	}
	for _, name := range []string{"good-irreversible", "value-left", "token-swapped", "good-openai-chat", "wire-owner-in-instruction", "good-reversible", "reversible-mac-altered"} {
		req := vectorRequest(t, vs[name])
		want := verifier.Verify(req)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		got, err := Run(ctx, exe, []string{Arg}, nil, nil, req)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Verdict != want.Verdict || len(got.Claims) != len(want.Claims) {
			t.Fatalf("%s: attached %s, in process %s", name, got.Verdict, want.Verdict)
		}
		for i := range got.Claims {
			if got.Claims[i] != want.Claims[i] {
				t.Errorf("%s: claim %d attached %+v, in process %+v", name, i, got.Claims[i], want.Claims[i])
			}
		}
	}
}

// TestAttachmentMustBeSealed: the plugin refuses a memfd that could still
// change, and one whose size differs from the declared sizes.
func TestAttachmentMustBeSealed(t *testing.T) {
	f := unsealedMemfd(t, "abc")
	if _, _, err := openAttachment(int(f.Fd()), []uint64{3, 0, 0, 0, 0}); err != errAttachment {
		t.Fatalf("unsealed attachment: %v", err)
	}
	sealed, err := makeAttachment([nInputs][]byte{[]byte("abc"), nil, nil, nil, nil})
	if err != nil {
		t.Fatal(err)
	}
	defer sealed.Close()
	if _, err := sealed.Write([]byte("x")); err == nil {
		t.Fatal("a sealed attachment accepted a write")
	}
	if _, _, err := openAttachment(int(sealed.Fd()), []uint64{4, 0, 0, 0, 0}); err != errAttachment {
		t.Fatalf("wrong size: %v", err)
	}
	b, unmap, err := openAttachment(int(sealed.Fd()), []uint64{1, 2, 0, 0, 0})
	if err != nil || string(b) != "abc" {
		t.Fatalf("sealed attachment: %q %v", b, err)
	}
	unmap()
}

// TestAttachmentReusesBuffer: an attachment up to reuseMax is read into the
// plugin's one reusable buffer while it is free, and its release clears
// it; one that arrives while the buffer is held, or a larger one, is
// mapped. Releasing twice is harmless.
func TestAttachmentReusesBuffer(t *testing.T) {
	sealed := func(content []byte) *os.File {
		f, err := makeAttachment([nInputs][]byte{content})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	inBuffer := func(b []byte) bool {
		return len(b) > 0 && cap(reused.b) > 0 && &b[0] == &reused.b[:1][0]
	}
	first, second := sealed([]byte("owner-value-one")), sealed([]byte("owner-value-two"))
	b1, release1, err := openAttachment(int(first.Fd()), []uint64{15})
	if err != nil || string(b1) != "owner-value-one" {
		t.Fatalf("first attachment: %q %v", b1, err)
	}
	if !inBuffer(b1) {
		t.Fatal("an attachment arriving while the buffer is free was not read into it")
	}
	b2, release2, err := openAttachment(int(second.Fd()), []uint64{15})
	if err != nil || string(b2) != "owner-value-two" {
		t.Fatalf("second attachment: %q %v", b2, err)
	}
	if inBuffer(b2) {
		t.Fatal("an attachment arriving while the buffer is held was read into it")
	}
	release2()
	release2()
	release1()
	release1()
	if got := reused.b[:15]; !bytes.Equal(got, make([]byte, 15)) {
		t.Fatalf("the buffer holds %q after its release, want zeros", got)
	}
	b3, release3, err := openAttachment(int(second.Fd()), []uint64{15})
	if err != nil || string(b3) != "owner-value-two" || !inBuffer(b3) {
		t.Fatalf("after the release: %q %v, in the buffer %v", b3, err, inBuffer(b3))
	}
	release3()

	big := bytes.Repeat([]byte{'x'}, reuseMax+1)
	b4, release4, err := openAttachment(int(sealed(big).Fd()), []uint64{uint64(len(big))})
	if err != nil || !bytes.Equal(b4, big) {
		t.Fatalf("large attachment: %v", err)
	}
	if inBuffer(b4) {
		t.Fatal("an attachment over reuseMax was read into the buffer")
	}
	release4()
	release4()
}

// procFields returns the fields of /proc/<pid>/stat after the command
// name (state, ppid, …); ok is false once the process has gone.
func procFields(pid int) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	// pid (comm) state ppid …: comm may hold spaces, so split after its
	// closing parenthesis.
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])), true
}

// procStat reads the state and the parent of process pid; ok is false once
// it has gone.
func procStat(pid int) (state byte, ppid int, ok bool) {
	f, ok := procFields(pid)
	if !ok || len(f) < 2 {
		return 0, 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return f[0][0], ppid, err == nil
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != 'Z'
}

// children returns the live children of process parent.
func children(t *testing.T, parent int) []int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if state, ppid, ok := procStat(pid); ok && state != 'Z' && ppid == parent {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestLaunchPending: a plugin launched before its request verifies it as
// Run does, once; a second Verify is ErrUsed; Close stops the process,
// also when it is closed while still starting and never used.
func TestLaunchPending(t *testing.T) {
	exe := selfExe(t)
	before := len(children(t, os.Getpid()))
	launch := func() *Pending {
		t.Helper()
		p, err := Launch(context.Background(), exe, []string{Arg}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var req verifier.Request
	for _, v := range loadVectors(t) {
		if v.Name == "value-left" {
			req = vectorRequest(t, v)
		}
	}
	p := launch()
	time.Sleep(50 * time.Millisecond) // the request is ready after the start began
	got, err := p.Verify(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if want := verifier.Verify(req); got.Verdict != want.Verdict || got.Verdict != "fail" || len(got.Claims) != len(want.Claims) {
		t.Errorf("launched plugin: %s, in process %s", got.Verdict, want.Verdict)
	}
	if _, err := p.Verify(context.Background(), req); !errors.Is(err, ErrUsed) {
		t.Errorf("second Verify = %v, want ErrUsed", err)
	}
	if n := len(children(t, os.Getpid())); n != before+1 {
		t.Errorf("%d children while a plugin runs, want %d", n, before+1)
	}
	p.Close()
	if n := len(children(t, os.Getpid())); n != before {
		t.Errorf("%d children after Close, want %d", n, before)
	}

	// Closed while starting, never used.
	t0 := time.Now()
	launch().Close()
	if n := len(children(t, os.Getpid())); n != before {
		t.Errorf("%d children after Close during the start, want %d", n, before)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("Close during the start took %v", d)
	}
}

// TestPluginDiesWithHost: a plugin does not outlive a host that is killed
// (SIGKILL, so no Close runs): the kernel kills it with the host.
func TestPluginDiesWithHost(t *testing.T) {
	exe := selfExe(t)
	host := exec.Command(exe, "-test.run=^$")
	// No Close runs in the killed host, so its plugin's socket directory
	// is left behind: make it under the test's own directory.
	host.Env = append(os.Environ(), hostEnv+"=1", "TMPDIR="+t.TempDir())
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer host.Process.Kill()
	line := make([]byte, 6)
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "ready\n" {
		t.Fatalf("host did not start its plugin: %q %v", line, err)
	}
	kids := children(t, host.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("%d processes under the host, want its plugin", len(kids))
	}
	plugin := kids[0]
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	host.Wait()
	for deadline := time.Now().Add(10 * time.Second); alive(plugin); {
		if time.Now().After(deadline) {
			syscall.Kill(plugin, syscall.SIGKILL)
			t.Fatalf("plugin %d outlived its killed host by 10 s", plugin)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReceiveAttachment: the plugin takes exactly one descriptor in one
// one-byte message from its channel, without waiting; anything else is
// errAttachment, and every descriptor that came is closed.
func TestReceiveAttachment(t *testing.T) {
	sealed, err := makeAttachment([nInputs][]byte{[]byte("abc"), nil, nil, nil, nil})
	if err != nil {
		t.Fatal(err)
	}
	defer sealed.Close()
	sizes := []uint64{3, 0, 0, 0, 0}
	open := func(t *testing.T) (host, child *os.File) {
		t.Helper()
		h, c, err := newAttachChannel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close(); c.Close() })
		return h, c
	}
	t.Run("one sealed memfd", func(t *testing.T) {
		h, c := open(t)
		if err := sendAttachment(h, sealed); err != nil {
			t.Fatal(err)
		}
		b, unmap, err := receiveAttachment(int(c.Fd()), sizes)
		if err != nil || string(b) != "abc" {
			t.Fatalf("%q %v", b, err)
		}
		unmap()
		if _, _, err := receiveAttachment(int(c.Fd()), sizes); err != errAttachment {
			t.Errorf("a second receive: %v, want errAttachment", err)
		}
	})
	t.Run("nothing sent", func(t *testing.T) {
		_, c := open(t)
		if _, _, err := receiveAttachment(int(c.Fd()), sizes); err != errAttachment {
			t.Errorf("%v, want errAttachment without waiting", err)
		}
	})
	t.Run("no descriptor", func(t *testing.T) {
		h, c := open(t)
		if err := unix.Sendmsg(int(h.Fd()), []byte{'a'}, nil, nil, 0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := receiveAttachment(int(c.Fd()), sizes); err != errAttachment {
			t.Errorf("%v, want errAttachment", err)
		}
	})
	t.Run("two descriptors", func(t *testing.T) {
		h, c := open(t)
		before := openFDs(t)
		rights := unix.UnixRights(int(sealed.Fd()), int(sealed.Fd()))
		if err := unix.Sendmsg(int(h.Fd()), []byte{'a'}, rights, nil, 0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := receiveAttachment(int(c.Fd()), sizes); err != errAttachment {
			t.Errorf("%v, want errAttachment", err)
		}
		if after := openFDs(t); after != before {
			t.Errorf("%d descriptors open after refusing two, %d before", after, before)
		}
	})
	t.Run("unsealed memfd", func(t *testing.T) {
		h, c := open(t)
		if err := sendAttachment(h, unsealedMemfd(t, "abc")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := receiveAttachment(int(c.Fd()), sizes); err != errAttachment {
			t.Errorf("%v, want errAttachment", err)
		}
	})
}

// unsealedMemfd is a memfd holding content that could still change; it is
// closed when the test ends.
func unsealedMemfd(t *testing.T, content string) *os.File {
	t.Helper()
	fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Skipf("memfd_create: %v", err)
	}
	f := os.NewFile(uintptr(fd), "unsealed")
	t.Cleanup(func() { f.Close() })
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	return f
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
