package verifier

import (
	"os/exec"
	"strings"
	"testing"
)

// listDeps returns the packages go list -deps (with args) names for pkg,
// each as its import path without the test decorations: "p [p.test]",
// "p_test [p.test]" and "p.test" are p.
func listDeps(t *testing.T, pkg string, args ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, append(append([]string{"list"}, args...), "-deps", pkg)...).Output()
	if err != nil {
		t.Fatalf("go list %v -deps %s: %v", args, pkg, err)
	}
	var deps []string
	for _, dep := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		dep, _, _ = strings.Cut(dep, " [")
		deps = append(deps, strings.TrimSuffix(strings.TrimSuffix(dep, ".test"), "_test"))
	}
	return deps
}

// TestIndependence is a statement of policy: the verifier may import
// receipts and canon, and internal/bigbuf (memory outside the heap; it
// reads no input) and internal/syncbuf (a locked buffer its tests give the
// plugin's logger; it parses nothing), and nothing else of the project, never censor or
// grammar, so that its recognizer cannot share their mistakes. Its tests,
// its test-cut builder and its plugin are held to the same rule (go list
// -test): they are the verifier's own evidence, and a test that consulted
// the grammar could pass for the grammar's reasons. The tests comparing the
// verifier with the censor live in censor. The vector generator imports no
// part of the verifier either.
func TestIndependence(t *testing.T) {
	const mod = "github.com/privacycut/privacycut/"
	for _, pkg := range []string{".", "./internal/vecgen", "./internal/cuttest", "./plugin"} {
		for _, dep := range listDeps(t, pkg, "-test") {
			rest, ok := strings.CutPrefix(dep, mod)
			if !ok {
				continue
			}
			switch {
			case rest == "receipts", rest == "canon", rest == "internal/bigbuf", rest == "internal/syncbuf", strings.HasPrefix(rest, "verifier"):
			default:
				t.Errorf("%s depends on %s", pkg, dep)
			}
			self := "verifier/" + strings.TrimPrefix(pkg, "./")
			if strings.HasPrefix(pkg, "./internal/") && strings.HasPrefix(rest, "verifier") && rest != self {
				t.Errorf("%s imports the verifier (%s)", pkg, dep)
			}
		}
	}
}

// TestInProcessLinksNoRPC: the in-process verifier, what a program links
// to verify in its own process, holds no gRPC and no go-plugin; they
// belong to package verifier/plugin only.
func TestInProcessLinksNoRPC(t *testing.T) {
	deps := listDeps(t, ".")
	if len(deps) < 2 {
		t.Fatalf("go list -deps gave %v", deps)
	}
	for _, dep := range deps {
		for _, banned := range []string{"google.golang.org/grpc", "google.golang.org/protobuf", "github.com/hashicorp/go-plugin"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("the in-process verifier depends on %s", dep)
			}
		}
	}
	// The plugin does link them: the test looks at the right names.
	found := false
	for _, dep := range listDeps(t, "./plugin") {
		found = found || dep == "github.com/hashicorp/go-plugin"
	}
	if !found {
		t.Error("go list -deps ./plugin does not name github.com/hashicorp/go-plugin")
	}
}
