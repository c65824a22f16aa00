package verifier

import (
	"os/exec"
	"strings"
	"testing"
)

// TestIndependence is a statement of policy: the verifier may import
// receipts and canon, and internal/bigbuf (memory outside the heap; it reads no
// input), and nothing else of the project, never censor or grammar, so that
// its recognizer cannot share their mistakes. Its tests are held to the same
// rule (go list -test): they are the verifier's own evidence, and a test
// that consulted the grammar could pass for the grammar's reasons. The tests
// comparing the verifier with the censor live in censor.
func TestIndependence(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	for _, pkg := range []string{".", "./internal/vecgen"} {
		out, err := exec.Command(gobin, "list", "-test", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -test -deps %s: %v", pkg, err)
		}
		const mod = "github.com/privacycut/privacycut/"
		for _, dep := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			// "p [p.test]", "p_test [p.test]" and "p.test" are p and its tests.
			dep, _, _ = strings.Cut(dep, " [")
			dep = strings.TrimSuffix(strings.TrimSuffix(dep, ".test"), "_test")
			rest, ok := strings.CutPrefix(dep, mod)
			if !ok {
				continue
			}
			switch {
			case rest == "receipts", rest == "canon", rest == "internal/bigbuf", strings.HasPrefix(rest, "verifier"):
			default:
				t.Errorf("%s depends on %s", pkg, dep)
			}
			if pkg != "." && strings.HasPrefix(rest, "verifier") && rest != "verifier/internal/vecgen" {
				t.Errorf("the vector generator imports the verifier (%s)", dep)
			}
		}
	}
}
