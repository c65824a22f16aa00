package deps

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/privacycut/privacycut"

// policy is the statement of policy: for each package (a prefix: it covers
// its sub-packages), the project packages it may depend on, directly or not.
// A package not listed may depend on anything (commands, tests, cmd/internal/cli).
var policy = map[string][]string{
	"canon":             {},
	"receipts":          {"canon"},
	"grammar":           {"receipts", "canon"},
	"censor":            {"grammar", "receipts", "canon"},
	"verifier":          {"receipts", "canon", "verifier", "internal/bigbuf"},
	"verifier/plugin":   {"receipts", "canon", "verifier", "internal/bigbuf", "internal/syncbuf"},
	"egress":            {"receipts", "canon", "verifier", "internal/durable", "internal/bigbuf", "internal/readall"},
	"wire":              {"receipts", "canon"},
	"lease":             {"receipts", "canon"},
	"rehydrate":         {"receipts", "canon"},
	"vault":             {"vault", "lease", "rehydrate", "receipts", "canon", "internal/durable", "internal/unixsock"},
	"internal/durable":  {},
	"internal/unixsock": {},
	"internal/syncbuf":  {},
	"internal/gen":      {},
	"internal/bigbuf":   {},
	"internal/readall":  {},
	// vaultd's early re-execution under GOTRACEBACK=none links nothing.
	"cmd/vaultd/internal/tbexec": {},
	"importer":                   {"grammar", "receipts", "canon"},
	"osvvocab":                   {"grammar", "receipts", "canon"},
	"route":                      {"receipts", "canon"},

	// The gateway reaches the censor, the verifier and the vault through
	// the pipeline, and links only the vault's light half (the client):
	// never the vault's service, its store or Badger (TestVaultClientIsLight).
	"gateway": append([]string{"pipeline", "grammar", "censor", "egress", "route", "rehydrate", "verifier", "wire",
		"internal/durable", "internal/bigbuf", "internal/readall", "internal/unixsock", "vault/client", "vault/vaultapi", "vault/internal/vaultpb",
		"vault/internal/rpc"}, vaultLight...),

	// The vault's light half (the call types and errors, the gRPC glue
	// both ends share, the client) links neither the service nor the store
	// (nor Badger: TestVaultClientIsLight); the error core links nothing
	// of the vault.
	"vault/internal/verr": {"receipts", "canon"},
	"vault/vaultapi":      vaultLight,
	"vault/internal/rpc":  append([]string{"vault/vaultapi", "vault/internal/vaultpb"}, vaultLight...),
	"vault/client":        append([]string{"vault/vaultapi", "vault/internal/vaultpb", "vault/internal/rpc"}, vaultLight...),
}

// vaultLight is what the vault's light packages may link: the error core,
// the hardening profile, sealing, the arena sealing opens into, and the
// lease and evidence types.
var vaultLight = []string{"vault/internal/verr", "vault/harden", "vault/seal", "vault/arena", "lease", "receipts", "canon"}

// TestImportPolicy fails when a package depends on a project package the
// policy does not allow — above all, when the verifier depends on the
// censor or the grammar, with which it must share no parsing code.
func TestImportPolicy(t *testing.T) {
	checked := map[string]bool{}
	for _, p := range listDeps(t, module+"/...") {
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		rule, allowed := ruleFor(rel)
		if rule == "" {
			continue
		}
		checked[rule] = true
		for _, d := range p.Deps {
			drel, ok := strings.CutPrefix(d, module+"/")
			if !ok {
				continue
			}
			if !permitted(drel, allowed) {
				t.Errorf("%s depends on %s; policy for %s allows only %v", rel, drel, rule, allowed)
			}
		}
	}
	var missing []string
	for rule := range policy {
		if !checked[rule] {
			missing = append(missing, rule)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("policy names packages that do not exist: %v", missing)
	}
}

// testsBound names the rules that bind a package's tests as well as its
// code. The verifier's tests are its own evidence: they too must share no
// parsing code with the censor or the grammar (the tests that compare the
// verifier with them live in censor and may import both). The other
// packages' tests may use anything, the generators of internal/gen above
// all.
var testsBound = []string{"verifier", "verifier/plugin"}

// TestImportPolicyOfTests applies the rules of testsBound to the test
// binaries of those packages too: a verifier _test.go importing the grammar
// would be reported.
func TestImportPolicyOfTests(t *testing.T) {
	for _, rule := range testsBound {
		tests := 0
		for _, p := range listDeps(t, "-test", module+"/"+rule+"/...") {
			rel, ok := strings.CutPrefix(basePath(p.ImportPath), module+"/")
			if !ok {
				continue
			}
			if r, _ := ruleFor(rel); r != rule {
				continue
			}
			if strings.HasSuffix(p.ImportPath, ".test") {
				tests++
			}
			_, allowed := ruleFor(rel)
			for _, d := range p.Deps {
				drel, ok := strings.CutPrefix(basePath(d), module+"/")
				if !ok {
					continue
				}
				if !permitted(drel, allowed) {
					t.Errorf("%s depends on %s; policy for %s (tests included) allows only %v", p.ImportPath, drel, rule, allowed)
				}
			}
		}
		if tests == 0 {
			t.Errorf("go list -test found no test binary under %s", rule)
		}
	}
}

// heavy are the modules a light vault package must not link.
var heavy = []string{"github.com/dgraph-io/badger", "github.com/dgraph-io/ristretto"}

// TestVaultClientIsLight: go list -deps of the vault client, the call
// types and the shared gRPC glue holds no Badger and neither the service
// nor the store, and the call types hold no gRPC either.
func TestVaultClientIsLight(t *testing.T) {
	vault := []string{module + "/vault/service", module + "/vault/store", module + "/vault/keys"}
	for pkg, banned := range map[string][]string{
		"vault/client":       append(append([]string{}, vault...), heavy...),
		"vault/internal/rpc": append(append([]string{}, vault...), heavy...),
		"vault/vaultapi":     append(append([]string{"google.golang.org/grpc"}, vault...), heavy...),
		"gateway":            append(append([]string{}, vault...), heavy...),
	} {
		ps := listDeps(t, module+"/"+pkg)
		if len(ps) == 0 || ps[len(ps)-1].ImportPath != module+"/"+pkg {
			t.Fatalf("go list -deps %s did not list the package itself last", pkg)
		}
		for _, p := range ps {
			if b, ok := bannedIn(p.ImportPath, banned); ok {
				t.Errorf("%s links %s (banned: %s)", pkg, p.ImportPath, b)
			}
		}
	}
	// The positive control: the service does link Badger and the store.
	var badger, store bool
	for _, p := range listDeps(t, module+"/vault/service") {
		_, b := bannedIn(p.ImportPath, heavy)
		badger = badger || b
		store = store || p.ImportPath == module+"/vault/store"
	}
	if !badger || !store {
		t.Fatalf("go list -deps of the service shows Badger %v, the store %v: the check sees nothing", badger, store)
	}
}

// bannedIn reports the entry of banned that path is, or lies under.
func bannedIn(path string, banned []string) (string, bool) {
	for _, b := range banned {
		if path == b || strings.HasPrefix(path, b+"/") {
			return b, true
		}
	}
	return "", false
}

// pkgDeps is one package of go list -deps: its path and its dependencies.
type pkgDeps struct {
	ImportPath string
	Deps       []string
}

// listDeps runs go list -deps with args and returns its packages.
func listDeps(t *testing.T, args ...string) []pkgDeps {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps", "-json=ImportPath,Deps"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	var ps []pkgDeps
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p pkgDeps
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// basePath is the import path of the package that go list -test names by
// path: "p [p.test]" (p compiled with its tests), "p_test [p.test]" (its
// external tests) and "p.test" (the test binary) are all p.
func basePath(path string) string {
	path, _, _ = strings.Cut(path, " [")
	path = strings.TrimSuffix(path, ".test")
	return strings.TrimSuffix(path, "_test")
}

func ruleFor(rel string) (string, []string) {
	best := ""
	for rule := range policy {
		if (rel == rule || strings.HasPrefix(rel, rule+"/")) && len(rule) > len(best) {
			best = rule
		}
	}
	if best == "" {
		return "", nil
	}
	return best, policy[best]
}

func permitted(dep string, allowed []string) bool {
	for _, a := range allowed {
		if dep == a || strings.HasPrefix(dep, a+"/") {
			return true
		}
	}
	return false
}

// TestPolicyBites checks the checker itself: the verifier importing the
// grammar would be reported.
func TestPolicyBites(t *testing.T) {
	_, allowed := ruleFor("verifier")
	if permitted("grammar", allowed) || permitted("censor", allowed) {
		t.Fatal("the policy lets the verifier import the grammar or the censor")
	}
	if _, allowed := ruleFor("verifier/internal/verifierpb"); permitted("grammar", allowed) {
		t.Fatal("sub-packages of the verifier are not covered")
	}
	if !permitted("receipts", allowed) {
		t.Fatal("the verifier may import receipts")
	}
	for in, want := range map[string]string{
		module + "/verifier": module + "/verifier",
		module + "/verifier [" + module + "/verifier.test]":      module + "/verifier",
		module + "/verifier_test [" + module + "/verifier.test]": module + "/verifier",
		module + "/verifier.test":                                module + "/verifier",
		module + "/grammar [" + module + "/verifier.test]":       module + "/grammar",
	} {
		if got := basePath(in); got != want {
			t.Errorf("basePath(%q) = %q, want %q", in, got, want)
		}
	}
}
