//go:build linux

package verifier

import (
	"context"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRunAttached verifies through a one-shot plugin whose inputs arrive in
// a sealed memfd: the verdicts equal the in-process ones.
func TestRunAttached(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	vs := map[string]vector{}
	for _, v := range loadVectors(t) {
		vs[v.name] = v
	}
	for _, name := range []string{"good-irreversible", "value-left", "token-swapped"} {
		req := vs[name].request(t)
		want := Verify(req)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		got, err := Run(ctx, exe, []string{"-test.run=^$"}, []string{pluginEnv + "=1"}, nil, req)
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
	fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Skipf("memfd_create: %v", err)
	}
	f := os.NewFile(uintptr(fd), "unsealed")
	defer f.Close()
	f.Write([]byte("abc"))
	if _, _, err := openAttachment(fd, []uint64{3, 0, 0, 0, 0}); err != errAttachment {
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
