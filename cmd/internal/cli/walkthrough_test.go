package cli

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/internal/standin"
)

// walkthroughFindings is the size of the scan the walkthrough is run on.
const walkthroughFindings = 500

// TestWalkthrough runs the sh blocks of docs/WALKTHROUGH.md as written, in
// order, as one shell session: with the built cut and vaultd, the stand-in
// model, and stand-ins for curl (the OSV database fixture as vulndb.zip),
// go (go list -m all, go env GOVERSION), govulncheck (a generated
// 500-finding stream, or an OpenVEX document) and osv-scanner. It succeeds,
// the rehydrated answer holds all 500 findings with their owners restored,
// the lease ends CONSUMED (not CLAIMED), and nothing the session prints
// holds a private value of the scan.
func TestWalkthrough(t *testing.T) {
	cut, vaultd := buildBinaries(t)
	for _, tool := range []string{"sh", "unzip", "sed", "cp", "cat", "mkdir"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the walkthrough's session needs %s on PATH", tool)
		}
	}
	md, err := os.ReadFile("../../../docs/WALKTHROUGH.md")
	if err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	script.WriteString("set -e\n")
	for _, m := range regexp.MustCompile("(?s)\n```sh\n(.*?)\n```\n").FindAllSubmatch(md, -1) {
		script.Write(m[1])
		script.WriteString("\n")
	}
	if strings.Count(script.String(), "cut ") < 10 {
		t.Fatalf("too few commands extracted from the walkthrough:\n%s", script.String())
	}

	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	fixtures := filepath.Join(dir, "fixtures")
	stand := filepath.Join(dir, "bin")
	runtime := filepath.Join(dir, "run")
	for _, d := range []string{filepath.Join(home, "src", "ledger", ".github"), fixtures, stand, runtime} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, content string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	co, err := os.ReadFile(filepath.Join(importerTestdata, "CODEOWNERS"))
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(home, "src", "ledger", ".github", "CODEOWNERS"), string(co), 0o644)
	write(filepath.Join(home, "src", "ledger", "go.mod"), "module git.corp.example/payments/ledger\n\ngo 1.19\n", 0o644)
	write(filepath.Join(fixtures, "vulndb.zip"), string(zipDir(t, "../../../osvvocab/testdata/db")), 0o644)
	write(filepath.Join(fixtures, "scan.json"), string(walkthroughStream(t, walkthroughFindings)), 0o644)
	write(filepath.Join(fixtures, "modules.txt"), "git.corp.example/payments/ledger\ngolang.org/x/text v0.3.7\ngopkg.in/yaml.v2 v2.2.2\n", 0o644)
	for name, src := range map[string]string{"vex.json": "openvex/govulncheck.json", "osv.json": "osv-scanner/report.json"} {
		b, err := os.ReadFile(filepath.Join(importerTestdata, src))
		if err != nil {
			t.Fatal(err)
		}
		write(filepath.Join(fixtures, name), string(withoutPseudoVersion(t, name, b)), 0o644)
	}
	// The stand-ins do what the walkthrough needs of each tool, and refuse
	// any other use, so a changed command fails here.
	for name, body := range map[string]string{
		"curl": `[ "$*" = "-fsSLO https://vuln.go.dev/vulndb.zip" ] || { echo "curl stand-in: unexpected $*" >&2; exit 2; }
cp "$FIXTURES/vulndb.zip" ./vulndb.zip`,
		"go": `case "$*" in
"list -m all") cat "$FIXTURES/modules.txt" ;;
"env GOVERSION") echo go1.19.2 ;;
*) echo "go stand-in: unexpected $*" >&2; exit 2 ;;
esac`,
		"govulncheck": `[ -d "$HOME/vulndb/ID" ] || { echo "govulncheck stand-in: no database" >&2; exit 2; }
case "$*" in
"-db file://$HOME/vulndb -json ./...") cat "$FIXTURES/scan.json" ;;
"-db file://$HOME/vulndb -format openvex ./...") cat "$FIXTURES/vex.json" ;;
*) echo "govulncheck stand-in: unexpected $*" >&2; exit 2 ;;
esac`,
		"osv-scanner": `[ "$*" = "scan --format json --lockfile $HOME/src/ledger/go.mod" ] || { echo "osv-scanner stand-in: unexpected $*" >&2; exit 2; }
sed "s|/home/dana|$HOME|g" "$FIXTURES/osv.json"`,
	} {
		write(filepath.Join(stand, name), "#!/bin/sh\n"+body+"\n", 0o755)
	}
	for _, b := range []string{cut, vaultd} {
		if err := os.Symlink(b, filepath.Join(stand, filepath.Base(b))); err != nil {
			t.Fatal(err)
		}
	}
	model := httptest.NewServer(standin.Handler())
	defer model.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", script.String())
	cmd.Dir = home
	cmd.Env = []string{"HOME=" + home, "PATH=" + stand + ":" + os.Getenv("PATH"), "XDG_RUNTIME_DIR=" + runtime,
		"FIXTURES=" + fixtures, "MODEL_URL=" + model.URL + "/v1/" + standin.Honest}
	// The session's own process group: the vaultd it starts in the
	// background is stopped with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// The output goes to a file: the background vaultd keeps it open after
	// the session's shell has exited.
	outf, err := os.Create(filepath.Join(dir, "session.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer outf.Close()
	cmd.Stdout, cmd.Stderr = outf, outf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	werr := cmd.Wait()
	logb, _ := os.ReadFile(outf.Name())
	log := string(logb)
	if werr != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", werr, log)
	}

	triage := filepath.Join(home, "triage")
	data, err := os.ReadFile(filepath.Join(triage, "triage.json"))
	if err != nil {
		t.Fatalf("no rehydrated answer: %v\n%s", err, log)
	}
	if fi, _ := os.Stat(filepath.Join(triage, "triage.json")); fi.Mode().Perm() != 0o600 {
		t.Errorf("triage.json mode %v, want 0600", fi.Mode().Perm())
	}
	var answer struct {
		Findings []struct {
			Diagnostic  string `json:"diagnostic"`
			OwnerModule string `json:"owner_module"`
			OwnerTeam   string `json:"owner_team"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(data, &answer); err != nil {
		t.Fatal(err)
	}
	if len(answer.Findings) != walkthroughFindings {
		t.Fatalf("rehydrated answer has %d findings, want %d", len(answer.Findings), walkthroughFindings)
	}
	for i, f := range answer.Findings {
		if f.OwnerModule != "git.corp.example/payments/ledger" || f.OwnerTeam != "@corp/platform" {
			t.Fatalf("finding %d not rehydrated: %+v", i, f)
		}
	}
	for _, want := range []string{
		fmt.Sprintf("cut: import: %d findings, %d written, 0 dropped", walkthroughFindings, walkthroughFindings),
		"profile: accepted", "verification: pass (verifier/1)", "rehydrated answer written to triage.json", "(CONSUMED)",
		"cut: import: owner slots: file 1, team 1, person 1", // osv-scanner's lockfile matched under --repo-root
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the session's output lacks %q:\n%s", want, log)
		}
	}
	list := log[strings.LastIndex(log, "LEASE "):]
	if !regexp.MustCompile(`(?m)^pcl:\S+ +\S+ +CONSUMED +destroyed `).MatchString(list) || strings.Contains(list, "CLAIMED") {
		t.Errorf("lease list after the send:\n%s", list)
	}
	// Nothing printed holds a private value of the scan: the module, its
	// package paths and function names, the CODEOWNERS team.
	for _, private := range []string{"git.corp.example/payments", "Handle1", "@corp/platform", "internal/p1"} {
		if strings.Contains(log, private) {
			t.Errorf("the session printed the private value %q:\n%s", private, log)
		}
	}
}

// withoutPseudoVersion drops from a scanner fixture what concerns
// golang.org/x/net, in use at a pseudo-version: the walkthrough's
// vocabulary leaves pseudo-versions out (it builds without
// --pseudo-versions).
func withoutPseudoVersion(t *testing.T, name string, data []byte) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	keep := func(v any) bool {
		b, _ := json.Marshal(v)
		return !bytes.Contains(b, []byte("golang.org/x/net")) && !bytes.Contains(b, []byte("golang.org%2Fx%2Fnet"))
	}
	filter := func(xs []any) []any {
		var out []any
		for _, x := range xs {
			if keep(x) {
				out = append(out, x)
			}
		}
		return out
	}
	switch name {
	case "vex.json":
		doc["statements"] = filter(doc["statements"].([]any))
	case "osv.json":
		for _, r := range doc["results"].([]any) {
			r := r.(map[string]any)
			r["packages"] = filter(r["packages"].([]any))
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// zipDir is a zip archive of the files under root, as vuln.go.dev serves
// vulndb.zip (ID/…, index/…).
func zipDir(t *testing.T, root string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		w, err := zw.Create(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// walkthroughStream is a govulncheck -json stream of n symbol-level
// findings in the private module git.corp.example/payments/ledger, over
// the vulnerabilities of the OSV fixture at versions go list -m all names.
func walkthroughStream(t *testing.T, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(`{"config": {"protocol_version": "v1.0.0", "scanner_name": "govulncheck", "scan_level": "symbol", "scan_mode": "source"}}` + "\n")
	entries, _ := filepath.Glob(filepath.Join(importerTestdata, "osv", "*.json"))
	if len(entries) == 0 {
		t.Fatal("no OSV entries")
	}
	for _, p := range entries {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, data); err != nil {
			t.Fatal(err)
		}
		b.WriteString(`{"osv": ` + compact.String() + "}\n")
	}
	vulns := []struct{ id, mod, ver, fixed, pkg, fn string }{
		{"GO-2022-1059", "golang.org/x/text", "v0.3.7", "v0.3.8", "golang.org/x/text/language", "ParseAcceptLanguage"},
		{"GO-2022-1144", "stdlib", "v1.19.2", "v1.19.4", "net/http", "ListenAndServe"},
		{"GO-2020-0036", "gopkg.in/yaml.v2", "v2.2.2", "v2.2.8", "gopkg.in/yaml.v2", "Unmarshal"},
	}
	for i := 0; i < n; i++ {
		vu := vulns[i%len(vulns)]
		fmt.Fprintf(&b, `{"finding": {"osv": %q, "fixed_version": %q, "trace": [`+
			`{"module": %q, "version": %q, "package": %q, "function": %q},`+
			`{"module": "git.corp.example/payments/ledger", "package": "git.corp.example/payments/ledger/internal/p%d", "function": "Handle%d", "position": {"filename": "internal/p%d/f%d.go", "line": %d}}]}}`+"\n",
			vu.id, vu.fixed, vu.mod, vu.ver, vu.pkg, vu.fn, i%37, i, i%37, i, 10+i)
	}
	return b.Bytes()
}
