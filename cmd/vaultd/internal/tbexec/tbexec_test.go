package tbexec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"vaultd\x00--state-dir\x00/s\x00", []string{"vaultd", "--state-dir", "/s"}},
		{"vaultd\x00\x00x\x00", []string{"vaultd", "", "x"}},
		{"vaultd", []string{"vaultd"}},
		{"", nil},
	} {
		if d := cmp.Diff(tc.want, split([]byte(tc.in))); d != "" {
			t.Errorf("split(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

// TestCmdline: the test binary's own arguments read back as the runtime
// has them.
func TestCmdline(t *testing.T) {
	got, err := cmdline()
	if err != nil || len(got) == 0 {
		t.Fatalf("cmdline: %v %v", got, err)
	}
}

func FuzzSplit(f *testing.F) {
	f.Add([]byte("a\x00b\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		for _, s := range split(b) {
			n += len(s) + 1
		}
		if n < len(b) || n > len(b)+1 {
			t.Fatalf("split(%q) covers %d bytes", b, n)
		}
	})
}
