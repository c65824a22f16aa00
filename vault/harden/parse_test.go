//go:build linux && (amd64 || arm64 || riscv64)

package harden

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/receipts"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const fxBase = 0x7f0000000000

func TestParseSmaps(t *testing.T) {
	maps, err := parseSmaps(bytes.NewReader(fixture(t, "smaps-secretmem.txt")))
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{
		{0x400000, 0x680000, "r-xp", "/tmp/go-build 1234/b001/vaultd.test", []string{"rd", "ex", "mr", "mw", "me", "sd"}},
		{0xc000000000, 0xc000400000, "rw-p", "", []string{"rd", "wr", "mr", "mw", "me", "ac", "sd"}},
		{fxBase + 0x1000, fxBase + 0x2000, "---p", "", []string{"mr", "mw", "me", "nr"}},
		{fxBase + 0x2000, fxBase + 0x4000, "rw-s", "/secretmem (deleted)", []string{"rd", "wr", "sh", "mr", "mw", "ms", "lo", "dd"}},
		{fxBase + 0x4000, fxBase + 0x5000, "---p", "", []string{"mr", "mw", "me", "nr"}},
		{fxBase + 0x10000, fxBase + 0x20000, "rw-p", "", []string{"rd", "wr", "mr", "mw", "me", "ac", "sd"}},
		{0x7ffd1000000, 0x7ffd1021000, "rw-p", "[stack]", []string{"rd", "wr", "mr", "mw", "me", "gd", "ac"}},
	}
	if diff := cmp.Diff(want, maps); diff != "" {
		t.Errorf("parseSmaps (-want +got):\n%s", diff)
	}
}

func TestParseSmapsErrors(t *testing.T) {
	tests := []struct {
		name   string
		input  []byte
		line   int
		secret string // bytes of the input the error must not quote
	}{
		{"bad address", fixture(t, "smaps-malformed.txt"), 51, "7f00zz"},
		{"neither header nor field", fixture(t, "smaps-badline.txt"), 51, "neither a header"},
		{"field first", []byte("Size: 4 kB\n"), 1, "4 kB"},
		{"short header", []byte("7f0000001000-7f0000002000 ---p\n"), 1, "7f0000001000"},
		{"reversed range", []byte("7f0000002000-7f0000001000 ---p 00000000 00:00 0\n"), 1, "7f0000002000"},
		{"bad perms", []byte("7f0000001000-7f0000002000 rwzp 00000000 00:00 0\n"), 1, "rwzp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseSmaps(bytes.NewReader(tt.input))
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrParse) {
				t.Fatalf("parseSmaps = %v, want *Error wrapping ErrParse", err)
			}
			if e.Line != tt.line || e.Step != "smaps" || e.Code != receipts.VaultProfileNotProven {
				t.Errorf("error at %s:%d code %q, want smaps:%d %s", e.Step, e.Line, e.Code, tt.line, receipts.VaultProfileNotProven)
			}
			if strings.Contains(err.Error(), tt.secret) {
				t.Errorf("error %q quotes the input", err)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	tests := []struct {
		file string
		want rlimit
		err  bool
	}{
		{"limits-hardened.txt", rlimit{0, 0}, false},
		{"limits-default.txt", rlimit{0, unlimited}, false},
		{"limits-unlimited.txt", rlimit{unlimited, unlimited}, false},
		{"limits-nocore.txt", rlimit{}, true},
	}
	for _, tt := range tests {
		got, err := parseLimits(bytes.NewReader(fixture(t, tt.file)), "Max core file size")
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%s: parseLimits = %+v, %v; want %+v, error %v", tt.file, got, err, tt.want, tt.err)
		}
	}
	got, err := parseLimits(bytes.NewReader(fixture(t, "limits-default.txt")), "Max locked memory")
	if err != nil || got != (rlimit{8 << 20, 8 << 20}) {
		t.Errorf("Max locked memory = %+v, %v", got, err)
	}
	// "Max file size" must not match the "Max file locks" row, nor a prefix
	// of a longer name.
	got, err = parseLimits(strings.NewReader("Max file locks            7                    8                    locks\n"), "Max file")
	if err == nil {
		t.Errorf("a name prefix matched a longer row: %+v", got)
	}
	if _, err := parseLimits(strings.NewReader("Max core file size        zero                 0                    bytes\n"), "Max core file size"); !errors.Is(err, ErrParse) {
		t.Errorf("non-numeric limit = %v, want ErrParse", err)
	}
}

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		want  uint64
		err   bool
	}{
		{"fixture", fixture(t, "status.txt"), 16 << 10, false},
		{"low", fixture(t, "status-low.txt"), 4 << 10, false},
		{"missing", fixture(t, "status-novmlck.txt"), 0, true},
		{"not kB", []byte("VmLck:\t16 MB\n"), 0, true},
		{"not a number", []byte("VmLck:\tmany kB\n"), 0, true},
		{"overflow", []byte("VmLck:\t18446744073709551615 kB\n"), 0, true},
	}
	for _, tt := range tests {
		got, err := parseStatusKB(bytes.NewReader(tt.input), "VmLck")
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%s: parseStatusKB = %d, %v; want %d, error %v", tt.name, got, err, tt.want, tt.err)
		}
	}
}

func TestParseSwaps(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		want  bool
		err   bool
	}{
		{"none", fixture(t, "swaps-none.txt"), false, false},
		{"zram", fixture(t, "swaps-present.txt"), true, false},
		{"empty", nil, false, true},
		{"no header", []byte("/swapfile file 100 0 -2\n"), false, true},
	}
	for _, tt := range tests {
		got, err := parseSwaps(bytes.NewReader(tt.input))
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%s: parseSwaps = %v, %v; want %v, error %v", tt.name, got, err, tt.want, tt.err)
		}
	}
}

// FuzzParseSmaps: any input either fails with a content-free *Error or yields
// entries with a non-empty address range and well-formed permissions.
func FuzzParseSmaps(f *testing.F) {
	for _, name := range []string{"smaps-secretmem.txt", "smaps-mlock.txt", "smaps-malformed.txt", "smaps-badline.txt"} {
		f.Add(fixture(f, name))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		maps, err := parseSmaps(bytes.NewReader(b))
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Line < 1 {
				t.Fatalf("error %v is not a positioned *Error", err)
			}
			return
		}
		for _, m := range maps {
			if m.End <= m.Start || len(m.Perms) != 4 {
				t.Fatalf("accepted a bad entry %+v", m)
			}
		}
	})
}
