package keys

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// epochShape is an epoch as written: decimal, ≥ 1, no sign, no leading zero.
var epochShape = regexp.MustCompile(`^[1-9][0-9]*$`)

// FuzzEpoch: parseEpoch accepts exactly a decimal epoch ≥ 1 below 2^64
// without sign or leading zeros, and an accepted epoch formats back to the
// same text; any epoch ≥ 1, formatted as writePointer, epochName and
// wrapName write it, reads back. parsePointer (readPointer's reading of
// the current pointer's content) accepts exactly what writePointer writes:
// an epoch and one LF.
func FuzzEpoch(f *testing.F) {
	for _, s := range []string{"1", "42", "18446744073709551615", "18446744073709551616", "0", "01", "+1", "-1",
		"1 ", " 1", "1\n", "", "99999999999999999999", "١"} {
		f.Add(s, []byte(s+"\n"), uint64(1))
	}
	f.Add("7", []byte("7"), uint64(18446744073709551615))
	f.Add("7", []byte("7\n\n"), uint64(0))
	f.Add("7", []byte("7\r\n"), uint64(1)<<63)
	f.Add("7", []byte(strings.Repeat("1", 64)+"\n"), uint64(2))
	f.Fuzz(func(t *testing.T, s string, content []byte, n uint64) {
		e, ok := parseEpoch(s)
		_, perr := strconv.ParseUint(s, 10, 64)
		if want := epochShape.MatchString(s) && perr == nil; ok != want {
			t.Fatalf("parseEpoch(%q) = %d, %v; want accepted %v", s, e, ok, want)
		}
		if ok && (e < 1 || strconv.FormatUint(e, 10) != s) {
			t.Fatalf("parseEpoch(%q) = %d", s, e)
		}

		if n >= 1 {
			if e, ok := parseEpoch(strconv.FormatUint(n, 10)); !ok || e != n {
				t.Fatalf("epoch %d reads back as %d, %v", n, e, ok)
			}
			name := epochName(n)
			if e, ok := parseEpoch(name[len(epochPrefix) : len(name)-len(epochSuffix)]); !ok || e != n {
				t.Fatalf("%s reads back as %d, %v", name, e, ok)
			}
			base, ep, _ := strings.Cut(wrapName("aaaaaaaaaaaaaaaaaaaaaaaaaa", n), ".")
			if e, ok := parseEpoch(ep); base != "aaaaaaaaaaaaaaaaaaaaaaaaaa" || !ok || e != n {
				t.Fatalf("wrap name of epoch %d reads back as %d, %v", n, e, ok)
			}
		}

		c, ok := parsePointer(content)
		if ok && (c < 1 || strconv.FormatUint(c, 10)+"\n" != string(content)) {
			t.Fatalf("parsePointer(%q) = %d", content, c)
		}
		body, lf := strings.CutSuffix(string(content), "\n")
		if _, want := parseEpoch(body); ok != (want && lf) {
			t.Fatalf("parsePointer(%q) accepted %v", content, ok)
		}
	})
}
