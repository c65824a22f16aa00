package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// referenceKind reports, independently of the facility probes, whether this
// machine is of the kind the suites are specified for: root, a cgroup v1
// memory controller, memfd_secret, a core_pattern that is not a pipe. It
// names what is missing otherwise.
func referenceKind() (bool, []string) {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	cg, _ := os.ReadFile("/proc/self/cgroup")
	v1 := false
	for _, line := range strings.Split(string(cg), "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 && f[0] != "0" {
			for _, c := range strings.Split(f[1], ",") {
				v1 = v1 || c == "memory"
			}
		}
	}
	if !v1 {
		missing = append(missing, "cgroup v1 memory controller")
	}
	if fd, err := unix.MemfdSecret(0); err != nil {
		missing = append(missing, "memfd_secret")
	} else {
		unix.Close(fd)
	}
	if pat, err := os.ReadFile("/proc/sys/kernel/core_pattern"); err != nil || strings.HasPrefix(string(pat), "|") {
		missing = append(missing, "core_pattern not a pipe")
	}
	return len(missing) == 0, missing
}

// TestR3NoVacuousSkips is R3, the meta-test. Every suite that needs
// something of the machine skips through requireFacility, which names the
// missing facility and records the skip; this test checks that:
//
//   - no test in the package skips any other way (the source holds no Skip
//     call outside requireFacility), so the record is complete;
//   - suiteFacilities lists exactly the package's tests;
//   - on the reference machine kind (root, cgroup v1 memory controller,
//     memfd_secret, core_pattern not a pipe) every facility probe succeeds,
//     so no suite skips — and TestMain fails the run if one did anyway;
//   - elsewhere every suite that will skip names the facility and the
//     reason.
func TestR3NoVacuousSkips(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	tests := map[string]bool{}
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range af.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" {
				tests[fn.Name.Name] = true
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if ok && strings.HasPrefix(sel.Sel.Name, "Skip") && fn.Name.Name != "requireFacility" {
					t.Errorf("%s: %s calls %s: every skip must go through requireFacility", fset.Position(sel.Pos()), fn.Name.Name, sel.Sel.Name)
				}
				return true
			})
		}
	}
	for name := range tests {
		if _, ok := suiteFacilities[name]; !ok {
			t.Errorf("%s is not listed in suiteFacilities", name)
		}
	}
	for name := range suiteFacilities {
		if !tests[name] {
			t.Errorf("suiteFacilities lists %s, which is not a test of this package", name)
		}
	}

	ref, missing := referenceKind()
	probes := probeAll()
	var names []string
	for name := range suiteFacilities {
		names = append(names, name)
	}
	sort.Strings(names)
	skipping := 0
	for _, name := range names {
		for _, f := range suiteFacilities[name] {
			p := probes[f]
			switch {
			case p.ok:
			case ref:
				t.Errorf("on the reference machine %s would skip: facility %q: %s", name, f, p.reason)
			default:
				skipping++
				msg := skipMessage(f, p.reason)
				if !strings.Contains(msg, `"`+f+`"`) || p.reason == "" {
					t.Errorf("%s's skip does not name the facility and why: %q", name, msg)
				}
				t.Logf("%s will skip here: %s", name, msg)
			}
		}
	}
	if ref && !t.Failed() {
		t.Logf("figures: reference machine kind; %d suites, %d facility probes, all present: no suite may skip", len(names), len(probes))
	} else if !ref {
		t.Logf("not the reference machine kind (missing %v): %d facility requirements will skip, each naming its facility", missing, skipping)
	}
}
