package cli

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/privacycut/privacycut/internal/standin"
)

// reversibleSendEnv is an in-process vault, the stand-in model and a
// reversible plan (examples/schema.json) of a projection with canary owner
// values.
func reversibleSendEnv(t *testing.T) (f *vaultFixture, proj, plan, schema string) {
	t.Helper()
	f = newVaultFixture(t)
	model := httptest.NewServer(standin.Handler())
	t.Cleanup(model.Close)
	schema, _ = filepath.Abs("../../../examples/schema.json")
	proj = f.write(t, "p.json", projection(okRecord, "ask triage.rank-by-severity owner.team=\""+canary+"-team\"\n"))
	plan = filepath.Join(f.dir, "plan.json")
	if code, _, errb := f.run(t, "plan", "init", "--vocab", f.vocab, "--consumer", "model:triage", "--purpose", "dependency-triage",
		"--target", model.URL+"/v1/honest", "--mode", "reversible", "--schema", schema, "--station", "station-a", "--return-window", "30m", "--max-uses", "4", "-o", plan, proj); code != ExitOK {
		t.Fatalf("plan init: exit %d: %s", code, errb)
	}
	return f, proj, plan, schema
}

var leaseLine = regexp.MustCompile(`(?m)^lease: (pcl:[a-z2-7]{26}) \(ACTIVE\)$`)

// TestSendLeaseWithoutSchema: a reversible send without --schema prints
// its lease (human and --json) and how to rehydrate or end it; the lease
// stays ACTIVE, and cut rehydrate with that id restores the answer.
func TestSendLeaseWithoutSchema(t *testing.T) {
	f, proj, plan, schema := reversibleSendEnv(t)
	q := filepath.Join(f.dir, "answer.json")
	code, out, errb := f.cut(t, "send", "--vocab", f.vocab, "--plan", plan, "--verifier", "inprocess", "--quarantine", q, proj)
	if code != ExitOK {
		t.Fatalf("send: exit %d\n%s\n%s", code, out, errb)
	}
	m := leaseLine.FindSubmatch(out)
	if m == nil {
		t.Fatalf("human send output has no lease line:\n%s", out)
	}
	id := string(m[1])
	want := "cut: hint: lease " + id + " stays ACTIVE: rehydrate the answer with cut rehydrate --lease " + id +
		" --schema SCHEMA " + q + ", or end it with cut lease revoke " + id + "\n"
	if !bytes.Contains(errb, []byte(want)) {
		t.Errorf("stderr:\n%s\nwant:\n%s", errb, want)
	}
	code, out, _ = f.cut(t, "rehydrate", "--lease", id, "--schema", schema, "-o", filepath.Join(f.dir, "r.json"), "--json", q)
	if code != ExitOK || !bytes.Contains(out, []byte(`"state":"CONSUMED"`)) {
		t.Fatalf("rehydrate of the printed lease: exit %d\n%s", code, out)
	}

	code, out, _ = f.cut(t, "send", "--vocab", f.vocab, "--plan", plan, "--verifier", "inprocess", "--quarantine", q, "--json", proj)
	var res sendResult
	if err := json.Unmarshal(out, &res); err != nil || code != ExitOK {
		t.Fatalf("send --json: exit %d %v\n%s", code, err, out)
	}
	if res.Lease == nil || !regexp.MustCompile(`^pcl:[a-z2-7]{26}$`).MatchString(*res.Lease) || res.LeaseState != "ACTIVE" || res.Rehydrated != nil {
		t.Fatalf("send --json: lease %v state %q rehydrated %v", res.Lease, res.LeaseState, res.Rehydrated)
	}
}

// TestSendOutputFile: send --schema -o FILE writes the rehydrated answer to
// FILE (0600); stdout carries only the report, human and --json.
func TestSendOutputFile(t *testing.T) {
	f, proj, plan, schema := reversibleSendEnv(t)
	for _, asJSON := range []bool{false, true} {
		o := filepath.Join(f.dir, "triage.json")
		os.Remove(o)
		args := []string{"send", "--vocab", f.vocab, "--plan", plan, "--verifier", "inprocess", "--schema", schema, "-o", o, proj}
		if asJSON {
			args = append(args, "--json")
		}
		code, out, errb := f.cut(t, args...) // f.cut: no canary on stdout or stderr
		if code != ExitOK {
			t.Fatalf("send -o (json %v): exit %d\n%s\n%s", asJSON, code, out, errb)
		}
		data, err := os.ReadFile(o)
		if err != nil || !bytes.Contains(data, []byte(canary)) {
			t.Fatalf("-o file (json %v) lacks the rehydrated answer: %v\n%s", asJSON, err, data)
		}
		if fi, _ := os.Stat(o); fi.Mode().Perm() != 0o600 {
			t.Errorf("-o file mode %v, want 0600", fi.Mode().Perm())
		}
		if !asJSON {
			if !bytes.Contains(out, []byte("rehydrated answer written to "+o+"\n")) || !bytes.Contains(out, []byte("(CONSUMED)")) {
				t.Errorf("human report:\n%s", out)
			}
			continue
		}
		var res sendResult
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		if res.Output != o || res.Rehydrated == nil || string(res.Rehydrated.Result) != "null" || res.Rehydrated.State != "CONSUMED" {
			t.Errorf("send --json -o: output %q rehydrated %+v", res.Output, res.Rehydrated)
		}
	}
}

// TestSendOutputUsage: -o without --schema, or with a plan that is not
// reversible, is a usage error before anything is cut or sent.
func TestSendOutputUsage(t *testing.T) {
	f, proj, plan, _ := reversibleSendEnv(t)
	o := filepath.Join(f.dir, "out.json")
	code, _, errb := f.cut(t, "send", "--vocab", f.vocab, "--plan", plan, "-o", o, proj)
	if code != ExitUsage || string(errb) != "cut: error: cut send: -o writes the rehydrated answer of a reversible cut: it needs --schema\n" {
		t.Errorf("-o without --schema: exit %d %s", code, errb)
	}
	schema, _ := filepath.Abs("../../../examples/schema.json")
	e, proj2, plan2 := cutEnv(t, "https://model.example/v1/chat/completions", "--wire", "openai-chat@1", "--model", "m",
		"--instruction-file", "../../../examples/instruction.txt", "--schema", schema)
	code, _, errb = e.run(t, "send", "--vocab", e.vocab, "--plan", plan2, "--schema", schema, "-o", o, proj2)
	if code != ExitUsage || string(errb) != "cut: error: cut send: -o writes the rehydrated answer of a reversible cut; this plan is irreversible\n" {
		t.Errorf("-o with an irreversible plan: exit %d %s", code, errb)
	}
	if _, err := os.Stat(o); !os.IsNotExist(err) {
		t.Error("a refused -o created its file")
	}
}
