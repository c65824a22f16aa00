package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// canary is planted in the owner values of every projection these tests feed
// the command; no output stream may hold any piece of it.
const canary = "CANARY-91c4-ledger-zz"

func assertNoCanary(t testing.TB, what string, b []byte) {
	t.Helper()
	for i := 0; i+6 <= len(canary); i++ {
		if bytes.Contains(b, []byte(canary[i:i+6])) {
			t.Fatalf("%s holds canary piece %q:\n%s", what, canary[i:i+6], b)
		}
	}
}

const testVocab = `{"schema":"Vocabulary@1","revision":"cli-test",
 "diagnostics":["GO-2022-1059","CVE-2022-32149"],
 "modules":{"golang.org/x/text":["v0.3.7","v0.3.8"]},
 "statuses":["affected","not_affected"],
 "citations":["https://go.dev/issue/56152"],
 "questions":["triage.rank-by-severity"]}`

type testEnv struct {
	dir     string
	vocab   string
	journal string
	env     map[string]string // further environment variables
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	dir := t.TempDir()
	e := &testEnv{dir: dir, vocab: filepath.Join(dir, "vocab.json"), journal: filepath.Join(dir, "state", "journal.jsonl")}
	if err := os.WriteFile(e.vocab, []byte(testVocab), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *testEnv) getenv(k string) string {
	if v, ok := e.env[k]; ok {
		return v
	}
	switch k {
	case "PRIVACYCUT_JOURNAL":
		return e.journal
	case "PRIVACYCUT_EVIDENCE_KEY":
		return filepath.Join(e.dir, "evidence.key")
	case "HOME":
		return e.dir
	}
	return ""
}

func (e *testEnv) run(t *testing.T, args ...string) (code int, stdout, stderr []byte) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, Env{Stdout: &out, Stderr: &errb, Getenv: e.getenv})
	return code, out.Bytes(), errb.Bytes()
}

func (e *testEnv) write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// projection wraps texts into a Projection@1 with good labels and lineage.
func projection(texts ...string) string {
	var parts []string
	for i, tx := range texts {
		b, _ := json.Marshal(tx)
		parts = append(parts, `{"kind":"block","key":"k`+string(rune('0'+i))+`","text":`+string(b)+
			`,"label":{"class":"private","weight":1,"categories":[],"subjects":[],"parents":["sha256:p`+string(rune('0'+i))+`"],"handling":[]},"lineage":["sha256:l"]}`)
	}
	return `{"schema":"Projection@1","profile":"closed-diagnostic@1","parts":[` + strings.Join(parts, ",") + `]}`
}

const okRecord = "finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://go.dev/issue/56152 owner.module=\"" + canary + "\"\n"

func TestCheckOK(t *testing.T) {
	e := newTestEnv(t)
	p := e.write(t, "p.json", projection(okRecord, "ask triage.rank-by-severity owner.team=\"t1\" owner.team=\"t2\"\n"))
	code, out, errb := e.run(t, "check", "--vocab", e.vocab, "--json", p)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %s", code, errb)
	}
	want := `{"ok":true,"owner_spans":{"module":1,"team":2},"parts":2,"public_items":7,"records":2}` + "\n"
	if string(out) != want {
		t.Fatalf("stdout %s, want %s", out, want)
	}
	code, out, _ = e.run(t, "check", "--vocab", e.vocab, p)
	if code != ExitOK || !strings.Contains(string(out), "owner spans: module 1, team 2") {
		t.Fatalf("human output (exit %d):\n%s", code, out)
	}
	assertNoCanary(t, "stdout", out)
}

// TestCheckRefusalCodes has one case per refusal code `cut check` can
// produce. Each asserts the code and position, exit 3, the journal entry,
// and that no output stream holds the canary.
func TestCheckRefusalCodes(t *testing.T) {
	c := canary
	rec := func(s string) string { return projection(s) }
	tests := []struct {
		code  receipts.Code
		doc   string
		want  receipts.Refusal
		flags []string
	}{
		{receipts.UncoveredText, rec("The ledger " + c + " is owned by payments.\n"), receipts.Refusal{Part: 0, Kind: "block", Line: 1, Column: 1, Length: 54}, nil},
		{receipts.MalformedRecord, rec(strings.TrimSuffix(okRecord, "\n")), receipts.Refusal{Part: 0, Kind: "block", Line: 1, Column: len(okRecord) - 1, Length: 1}, nil},
		{receipts.UnknownDiagnostic, rec(strings.Replace(okRecord, "GO-2022-1059", "GO-2099-0001", 1)), receipts.Refusal{Part: 0, Kind: "block", Line: 1, Column: 9, Length: 12}, nil},
		{receipts.UnknownModule, rec(strings.Replace(okRecord, "golang.org/x/text@", "golang.org/x/texts@", 1)), receipts.Refusal{Part: 0, Kind: "block", Line: 1, Column: 22, Length: 18}, nil},
		{receipts.UnknownVersion, rec(strings.Replace(okRecord, "@v0.3.7", "@v0.3.9", 1)), receipts.Refusal{Part: 0, Kind: "block", Line: 1, Column: 40, Length: 6}, nil},
		{receipts.UnknownStatus, rec(strings.Replace(okRecord, " affected ", " exploited ", 1)), receipts.Refusal{Part: 0, Kind: "block", Line: 1, Column: 47, Length: 9}, nil},
		{receipts.UnknownCitation, rec(strings.Replace(okRecord, "https://go.dev/issue/56152", "https://wiki.corp/"+c, 1)), receipts.Refusal{Part: 0, Kind: "block", Line: 1, Column: 69, Length: 39}, nil},
		{receipts.UnknownQuestion, rec("ask triage.dump-source owner.team=\"" + c + "\"\n"), receipts.Refusal{Part: 0, Kind: "block", Line: 1, Column: 5, Length: 18}, nil},
		{receipts.UnknownCategory, rec("ask triage.rank-by-severity owner.email=\"" + c + "\"\n"), receipts.Refusal{Part: 0, Kind: "block", Line: 1, Column: 35, Length: 5}, nil},
		{receipts.ProhibitedCategory, rec("ask triage.rank-by-severity owner.credential=\"" + c + "\"\n"), receipts.Refusal{Part: 0, Kind: "block", Line: 1, Column: 35, Length: 10}, nil},
		{receipts.AmbiguousSpan, rec("ask triage.rank-by-severity owner.team=\" " + c + "\"\n"), receipts.Refusal{Part: 0, Kind: "block", Line: 1, Column: 41, Length: 22}, nil},
		{receipts.InvalidUTF8, strings.Replace(rec(okRecord), c, c+"\xff", 1), receipts.Refusal{Part: -1, Kind: "", Line: 1, Column: 0, Length: 1}, nil},
		{receipts.UnknownLineage, strings.Replace(rec(okRecord), `"lineage":["sha256:l"]`, `"lineage":["unknown"]`, 1), receipts.Refusal{Part: 0, Kind: "block"}, nil},
		{receipts.ExcessAncestry, projection(okRecord, okRecord), receipts.Refusal{Part: 1, Kind: "block"}, []string{"--max-parents", "1"}},
		{receipts.LimitExceeded, rec("ask triage.rank-by-severity" + strings.Repeat(" owner.team=\""+c+"\"", 65) + "\n"), receipts.Refusal{Part: 0, Kind: "block", Line: 1, Column: 27 + 64*35 + 2, Length: 34}, nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			e := newTestEnv(t)
			p := e.write(t, "p.json", tt.doc)
			args := append([]string{"check", "--vocab", e.vocab, p}, tt.flags...)
			code, out, errb := e.run(t, append(args, "--json")...)
			if code != ExitRefused {
				t.Fatalf("exit %d, want 3; stdout %s stderr %s", code, out, errb)
			}
			var doc receipts.RefusalDocument
			if err := canon.Unmarshal(out, &doc, canon.Options{}); err != nil {
				t.Fatalf("stdout is not a refusal document: %v\n%s", err, out)
			}
			if !doc.Refused || !strings.HasPrefix(doc.EventID, "evt:") || len(doc.Reasons) != 1 {
				t.Fatalf("refusal document %+v", doc)
			}
			got := doc.Reasons[0]
			want := tt.want
			want.Code = tt.code
			if tt.code == receipts.InvalidUTF8 {
				want.Column = got.Column // a file position; checked below
				if got.Column <= 0 {
					t.Fatalf("no column: %+v", got)
				}
			}
			if got != want {
				t.Fatalf("reason %+v, want %+v", got, want)
			}
			assertNoCanary(t, "stdout", out)
			assertNoCanary(t, "stderr", errb)
			// The human form says the same, without input.
			hcode, hout, herr := e.run(t, args...)
			if hcode != ExitRefused || !bytes.Contains(hout, []byte(string(tt.code))) {
				t.Fatalf("human form: exit %d\n%s", hcode, hout)
			}
			assertNoCanary(t, "human stdout", hout)
			assertNoCanary(t, "human stderr", herr)
			j, err := os.ReadFile(e.journal)
			if err != nil || !bytes.Contains(j, []byte(doc.EventID)) || !bytes.Contains(j, []byte(tt.code)) {
				t.Fatalf("journal lacks the refusal: %v\n%s", err, j)
			}
			assertNoCanary(t, "journal", j)
		})
	}
}

func TestCheckUsage(t *testing.T) {
	e := newTestEnv(t)
	for _, args := range [][]string{
		{"check"},
		{"check", "p.json"},
		{"check", "--vocab", e.vocab, "--json", "--show-text", "p.json"},
		{"check", "--bogus"},
		{"nosuchcommand"},
		{"demo", "extra"}, // before: ignored, and the whole demo ran
		{"check", "--vocab", e.vocab, "--max-parents", "0", "p.json"},  // before: 64
		{"check", "--vocab", e.vocab, "--max-parents", "-3", "p.json"}, // before: 64
		{"plan", "init", "--vocab", e.vocab, "--consumer", "m:x", "--purpose", "p", "--target", "notaurl", "p.json"},
		{"plan", "init", "--vocab", e.vocab, "--consumer", "m:x", "--purpose", "p", "--target", "ftp://h/", "p.json"},
		{"plan", "init", "--vocab", e.vocab, "--consumer", "m:x", "--purpose", "p", "--target", "https://u@h/", "p.json"},
		{"plan", "init", "--vocab", e.vocab, "--consumer", "m:x", "--purpose", "p", "--target", "https://h/#f", "p.json"},
	} {
		if code, _, _ := e.run(t, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, _ := e.run(t, "check", "--vocab", e.vocab, filepath.Join(e.dir, "missing.json")); code != ExitError {
		t.Errorf("missing file: exit %d, want 1", code)
	}
	// Help for a command with subcommands is its usage on stdout (exit 0),
	// not "unknown command".
	for _, args := range [][]string{{"lease", "-h"}, {"vault", "--help"}, {"lease", "help"}, {"help", "vault"}} {
		code, out, errb := e.run(t, args...)
		if code != ExitOK || !bytes.Contains(out, []byte("usage: cut "+args[len(args)-1])) && !bytes.Contains(out, []byte("usage: cut "+args[0])) ||
			bytes.Contains(out, []byte("unknown")) || len(errb) != 0 {
			t.Errorf("%v: exit %d\n%s\n%s", args, code, out, errb)
		}
	}
	// Without its subcommand, a group prints its usage on stderr (exit 2).
	if code, out, errb := e.run(t, "vault"); code != ExitUsage || len(out) != 0 || !bytes.Contains(errb, []byte("usage: cut vault")) {
		t.Errorf("vault: exit %d\n%s\n%s", code, out, errb)
	}
}

func TestCheckShowText(t *testing.T) {
	e := newTestEnv(t)
	p := e.write(t, "p.json", projection(strings.Replace(okRecord, "@v0.3.7", "@v0.3.9", 1)))
	code, out, _ := e.run(t, "check", "--vocab", e.vocab, "--show-text", p)
	if code != ExitRefused || !strings.Contains(string(out), `line 1 col 40 len 6: UNKNOWN_VERSION: "v0.3.9"`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
