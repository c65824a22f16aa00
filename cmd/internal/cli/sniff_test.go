package cli

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// TestProjectionHintLargeFiles: the hint reads a file's first 64 KiB, so a
// scanner's output larger than that is still named (its first members name
// it), and a large projection, whose first member is its parts, is read no
// further: it gets no hint, and the sniff is not a decoding of the file.
func TestProjectionHintLargeFiles(t *testing.T) {
	big := strings.Repeat(`{"package":{"name":"x"}},`, 200_000) // ≈ 5 MB
	for _, tc := range []struct {
		name, data, want string
	}{
		{"osv-scanner", `{"results":[` + big + `{}]}`, "cut import osv-scanner"},
		{"govulncheck", `{"config":{"scanner_name":"govulncheck"}}` + "\n" + `{"progress":{"message":"` + strings.Repeat("x", 1<<17) + `"}}`, "cut import govulncheck"},
		{"projection", `{"parts":[{"kind":"block","key":"k","text":"` + strings.Repeat("ask q.a\\n", 1<<19) + `"}],"profile":"closed-diagnostic@1","schema":"Projection@1"}`, ""},
	} {
		var stderr bytes.Buffer
		c := &Cmd{Env: Env{Stderr: &stderr}}
		c.projectionHint([]byte(tc.data))
		if tc.want == "" && stderr.Len() != 0 || tc.want != "" && !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s (%d bytes): hint %q, want %q", tc.name, len(tc.data), stderr.String(), tc.want)
		}
	}
	// Bounded: the sniff of a 4 MB projection reads 64 KiB, not the file
	// (encoding/json's decoder would buffer the whole parts member).
	proj := []byte(`{"parts":[{"kind":"block","key":"k","text":"` + strings.Repeat("ask q.a\\n", 1<<19) + `"}],"schema":"Projection@1"}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	(&Cmd{Env: Env{Stderr: &bytes.Buffer{}}}).projectionHint(proj)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("the hint of a %d-byte projection allocated %d bytes: it decodes the file", len(proj), n)
	}
}
