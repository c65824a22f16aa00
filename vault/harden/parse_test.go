//go:build linux && (amd64 || arm64 || riscv64)

package harden

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
			if e.Line != tt.line || e.Op != "smaps" || e.Code != receipts.VaultProfileNotProven {
				t.Errorf("error at %s:%d code %q, want smaps:%d %s", e.Op, e.Line, e.Code, tt.line, receipts.VaultProfileNotProven)
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

// checkParseError fails unless err is a content-free parse *Error of file:
// ErrParse, code VAULT_PROFILE_NOT_PROVEN, one of msgs (or a read error of
// the scanner), and a text made of those fields alone.
func checkParseError(t *testing.T, err error, file string, msgs ...string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Err != ErrParse || e.Code != receipts.VaultProfileNotProven || e.Op != file || e.Sys != nil || e.Line < 0 {
		t.Fatalf("error %#v is not a parse *Error of %s", err, file)
	}
	if !slices.Contains(msgs, e.Msg) && e.Msg != "read: "+bufio.ErrTooLong.Error() {
		t.Fatalf("message %q is not one of the fixed messages", e.Msg)
	}
	want := "harden: " + file
	if e.Line > 0 {
		want += ":" + strconv.Itoa(e.Line)
	}
	want += ": " + ErrParse.Error() + ": " + e.Msg + " (" + string(receipts.VaultProfileNotProven) + ")"
	if msg := err.Error(); msg != want {
		t.Fatalf("error text %q, want %q", msg, want)
	}
}

// procLines splits text as bufio.ScanLines does: at LF, a CR before it
// dropped, no empty last line.
func procLines(b []byte) []string {
	s := strings.Split(string(b), "\n")
	if s[len(s)-1] == "" {
		s = s[:len(s)-1]
	}
	for i := range s {
		s[i] = strings.TrimSuffix(s[i], "\r")
	}
	return s
}

// FuzzParseLimits: parseLimits never panics; it refuses with a content-free
// parse *Error, or returns the soft and hard limits of the first line that
// begins with the name and two spaces, which its first two fields give
// (parseLimitValue).
func FuzzParseLimits(f *testing.F) {
	const name = "Max core file size"
	for _, n := range []string{"limits-default.txt", "limits-hardened.txt", "limits-nocore.txt", "limits-unlimited.txt"} {
		f.Add(fixture(f, n))
	}
	f.Add([]byte("Max core file size        0                    0                    bytes\r\n"))
	f.Add([]byte("Max core file size        zero                 0                    bytes\n"))
	f.Add([]byte("Max core file size        18446744073709551616 0                    bytes\n"))
	f.Add([]byte("Max core file size        7\n"))
	f.Add([]byte("Max core file size\tunlimited\tunlimited\n"))
	f.Add([]byte("Max core file sizes       1                    2                    bytes\n"))
	f.Add([]byte("Max core file size  +1  -0\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseLimits(bytes.NewReader(b), name)
		if err != nil {
			checkParseError(t, err, "limits", "row without soft and hard limits",
				"limit is neither a number nor 'unlimited'", "no '"+name+"' row")
			return
		}
		for _, line := range procLines(b) {
			rest, ok := strings.CutPrefix(line, name)
			if !ok || !strings.HasPrefix(rest, "  ") {
				continue
			}
			fs := strings.Fields(rest)
			if len(fs) < 2 {
				t.Fatalf("accepted a row without two limits: %q", line)
			}
			soft, err1 := parseLimitValue(fs[0])
			hard, err2 := parseLimitValue(fs[1])
			if err1 != nil || err2 != nil || got != (rlimit{soft, hard}) {
				t.Fatalf("parseLimits = %+v for row %q", got, line)
			}
			return
		}
		t.Fatalf("parseLimits = %+v without a %q row", got, name)
	})
}

// FuzzParseLimitValue: "unlimited" reads as the unlimited constant, and any
// number formatted in decimal reads back as itself. parseLimitValue accepts
// nothing else but decimal digits (leading zeros allowed, as /proc never
// writes them) of a number below 2^64. Its error (strconv's, which quotes
// the field) never leaves parseLimits, which replaces it by a fixed text.
func FuzzParseLimitValue(f *testing.F) {
	for _, s := range []string{"unlimited", "0", "8388608", "18446744073709551615", "18446744073709551616",
		"007", "+1", "-1", "1_000", "0x10", " 1", "1 ", "Unlimited", "unlimited ", ""} {
		f.Add(s, uint64(0))
	}
	f.Add("1", uint64(1)<<63)
	f.Fuzz(func(t *testing.T, s string, n uint64) {
		if v, err := parseLimitValue(strconv.FormatUint(n, 10)); err != nil || v != n {
			t.Fatalf("parseLimitValue(%d) = %d, %v", n, v, err)
		}
		if v, err := parseLimitValue("unlimited"); err != nil || v != unlimited {
			t.Fatalf("parseLimitValue(unlimited) = %d, %v", v, err)
		}
		v, err := parseLimitValue(s)
		if err != nil {
			return
		}
		if s == "unlimited" {
			return
		}
		if s == "" || strings.Trim(s, "0123456789") != "" {
			t.Fatalf("parseLimitValue(%q) accepted = %d", s, v)
		}
		if want := strings.TrimLeft(s, "0"); strconv.FormatUint(v, 10) != want && !(v == 0 && want == "") {
			t.Fatalf("parseLimitValue(%q) = %d", s, v)
		}
	})
}

// FuzzParseStatusKB: parseStatusKB never panics; it refuses with a
// content-free parse *Error, or returns 1024 times the number of the first
// "VmLck:" line, which is "N kB" with N·1024 below 2^64.
func FuzzParseStatusKB(f *testing.F) {
	for _, n := range []string{"status.txt", "status-low.txt", "status-novmlck.txt"} {
		f.Add(fixture(f, n))
	}
	for _, s := range []string{"VmLck:\t16 MB\n", "VmLck:\tmany kB\n", "VmLck:\t18446744073709551615 kB\n",
		"VmLck:\t18014398509481983 kB\n", "VmLck:\t18014398509481984 kB\n", "VmLck: 1 kB 2\n", "VmLck:\t+1 kB\n",
		"VmLck:\t1 kB\r\nVmLck:\t2 kB\n", "VmLcked:\t1 kB\n", " VmLck:\t1 kB\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		const name = "VmLck"
		got, err := parseStatusKB(bytes.NewReader(b), name)
		if err != nil {
			checkParseError(t, err, "status", name+" is not 'N kB'", name+" is not a number of kB", "no "+name+" field")
			return
		}
		for _, line := range procLines(b) {
			rest, ok := strings.CutPrefix(line, name+":")
			if !ok {
				continue
			}
			fs := strings.Fields(rest)
			if len(fs) != 2 || fs[1] != "kB" {
				t.Fatalf("accepted %q", line)
			}
			n, err := strconv.ParseUint(fs[0], 10, 64)
			if err != nil || n > math.MaxUint64/1024 || got != n*1024 {
				t.Fatalf("parseStatusKB = %d for %q", got, line)
			}
			return
		}
		t.Fatalf("parseStatusKB = %d without a %s line", got, name)
	})
}

// FuzzParseSwaps: parseSwaps never panics; it refuses with a content-free
// parse *Error exactly when the first line is not the column header, and
// otherwise reports whether any later line is not blank.
func FuzzParseSwaps(f *testing.F) {
	for _, n := range []string{"swaps-none.txt", "swaps-present.txt"} {
		f.Add(fixture(f, n))
	}
	for _, s := range []string{"", "\n", "Filename\n \t\n", "Filename\r\n\r\n", "Filename\n\u00a0\n", "/swapfile file 100 0 -2\n", "Filenam\nx\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseSwaps(bytes.NewReader(b))
		lines := procLines(b)
		if err != nil {
			checkParseError(t, err, "swaps", "empty file", "no column header")
			var e *Error
			errors.As(err, &e)
			if len(lines) > 0 && strings.HasPrefix(lines[0], "Filename") && !strings.HasPrefix(e.Msg, "read: ") {
				t.Fatalf("refused a file with its header: %v", err)
			}
			return
		}
		if len(lines) == 0 || !strings.HasPrefix(lines[0], "Filename") {
			t.Fatal("accepted a file without its header")
		}
		want := slices.ContainsFunc(lines[1:], func(l string) bool { return strings.TrimSpace(l) != "" })
		if got != want {
			t.Fatalf("parseSwaps = %v, lines say %v", got, want)
		}
	})
}
