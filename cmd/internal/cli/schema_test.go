package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestPlanInitSchema: a reversible plan binds an output schema of the
// subset that marks at least one path for the plan's purpose; anything
// else is refused and no plan is written.
func TestPlanInitSchema(t *testing.T) {
	f := newTestEnv(t)
	example, err := filepath.Abs("../../../examples/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	proj := f.write(t, "p.json", projection(
		"finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://go.dev/issue/56152 owner.module=\""+canary+"\"\n"))
	notSubset := f.write(t, "ref.json", `{"type":"object","properties":{"a":{"$ref":"#/x"}}}`)
	tests := []struct {
		name, schema, purpose string
		code                  int
		stderr                string
	}{
		{"marked for the purpose", example, "dependency-triage", ExitOK, ""},
		{"marked for another purpose", example, "other-purpose", ExitUsage, "marks no path for purpose"},
		{"a purpose no marking can name", example, "dependency triage", ExitUsage, "marks no path for purpose"},
		{"not of the subset", notSubset, "dependency-triage", ExitError, "schema:"},
		{"missing", filepath.Join(f.dir, "none.json"), "dependency-triage", ExitError, "read schema"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := filepath.Join(f.dir, "plan"+string(rune('a'+i))+".json")
			code, _, errb := f.run(t, "plan", "init", "--vocab", f.vocab, "--consumer", "model:m", "--purpose", tt.purpose,
				"--target", "https://m.example/", "--mode", "reversible", "--schema", tt.schema, "-o", plan, proj)
			if code != tt.code || !strings.Contains(string(errb), tt.stderr) {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, errb)
			}
			if _, err := os.Stat(plan); (err == nil) != (tt.code == ExitOK) {
				t.Fatalf("plan written: %v, want %v", err == nil, tt.code == ExitOK)
			}
		})
	}
}

// TestSendSchemaCheckedFirst: `cut send --schema` checks the schema against
// the plan before anything is cut or sent. An irreversible plan (usage), a
// schema that is not the plan's (PLAN_MISMATCH) and an unreadable schema
// end the command with no request to the target and no lease granted.
func TestSendSchemaCheckedFirst(t *testing.T) {
	f := newVaultFixture(t)
	var posts atomic.Int32
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		w.Write([]byte(`{"summary":"s","findings":[]}`))
	}))
	defer model.Close()
	example, err := filepath.Abs("../../../examples/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	other := f.write(t, "other.json", strings.Replace(mustRead(t, example), `"max": 200}`, `"max": 1}`, 1))
	proj := f.write(t, "p.json", projection(
		"finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://go.dev/issue/56152 owner.module=\""+canary+"\"\n"))
	rev, irr := filepath.Join(f.dir, "rev.json"), filepath.Join(f.dir, "irr.json")
	if code, _, errb := f.run(t, "plan", "init", "--vocab", f.vocab, "--consumer", "model:m", "--purpose", "dependency-triage",
		"--target", model.URL+"/v1", "--mode", "reversible", "--schema", example, "--station", "station-a",
		"--return-window", "30m", "-o", rev, proj); code != ExitOK {
		t.Fatalf("plan init: exit %d: %s", code, errb)
	}
	if code, _, errb := f.run(t, "plan", "init", "--vocab", f.vocab, "--consumer", "model:m", "--purpose", "dependency-triage",
		"--target", model.URL+"/v1", "-o", irr, proj); code != ExitOK {
		t.Fatalf("plan init: exit %d: %s", code, errb)
	}
	tests := []struct {
		name, plan, schema string
		code               int
		out                string
	}{
		{"irreversible plan", irr, example, ExitUsage, ""},
		{"not the plan's schema", rev, other, ExitRefused, `"code":"PLAN_MISMATCH"`},
		{"unreadable schema", rev, filepath.Join(f.dir, "none.json"), ExitError, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errb := f.cut(t, "send", "--vocab", f.vocab, "--plan", tt.plan, "--schema", tt.schema,
				"--verifier", "inprocess", "--quarantine", filepath.Join(f.dir, "q.json"), "--json", proj)
			if code != tt.code || !strings.Contains(string(out), tt.out) {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tt.code, out, errb)
			}
			if strings.Contains(string(out)+string(errb), canary) {
				t.Fatal("output echoes the owner value")
			}
		})
	}
	if n := posts.Load(); n != 0 {
		t.Fatalf("%d requests reached the target", n)
	}
	leases, err := f.c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 0 {
		t.Fatalf("%d leases granted", len(leases))
	}
	// The control: with the plan's schema the answer is sent and rehydrated.
	if code, out, errb := f.cut(t, "send", "--vocab", f.vocab, "--plan", rev, "--schema", example,
		"--verifier", "inprocess", "--quarantine", filepath.Join(f.dir, "q.json"), "--json", proj); code != ExitOK {
		t.Fatalf("send with the plan's schema: exit %d\n%s\n%s", code, out, errb)
	}
	if posts.Load() != 1 {
		t.Fatalf("%d requests, want 1", posts.Load())
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
