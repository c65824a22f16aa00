package verifier

import (
	"os/exec"
	"strings"
	"testing"
)

// TestIndependence is a statement of policy: the verifier may import
// receipts, and internal/bigbuf (memory outside the heap; it reads no
// input), and nothing else of the project, never censor or grammar, so that
// its recognizer cannot share their mistakes.
func TestIndependence(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	for _, pkg := range []string{".", "./internal/vecgen"} {
		out, err := exec.Command(gobin, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		const mod = "github.com/privacycut/privacycut/"
		for _, dep := range strings.Fields(string(out)) {
			rest, ok := strings.CutPrefix(dep, mod)
			if !ok {
				continue
			}
			switch {
			case rest == "receipts", rest == "internal/bigbuf", strings.HasPrefix(rest, "verifier"):
			default:
				t.Errorf("%s depends on %s", pkg, dep)
			}
			if pkg != "." && strings.HasPrefix(rest, "verifier") && rest != "verifier/internal/vecgen" {
				t.Errorf("the vector generator imports the verifier (%s)", dep)
			}
		}
	}
}
