package egress_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
)

// TestSealRefusesForgedVerdict: the only verification a program outside
// the verifier can put in a SealRequest is the zero Verdict, and it is
// refused (it is no CutVerification@1), even with every other binding of a real cut intact.
func TestSealRefusesForgedVerdict(t *testing.T) {
	req, err := preparedCut("https://models.example.net/v1/triage")
	if err != nil {
		t.Fatal(err)
	}
	a := egress.NewAuthority(egress.Options{PolicyRevision: policy})
	if _, err := a.Seal(req); err != nil {
		t.Fatalf("the genuine verdict does not seal: %v", err)
	}
	req.Verification = verifier.Verdict{}
	b := egress.NewAuthority(egress.Options{PolicyRevision: policy})
	_, err = b.Seal(req)
	var ee *egress.Error
	if !errors.As(err, &ee) || ee.Code != receipts.PlanMismatch || ee.Reason != egress.ReasonSchema {
		t.Fatalf("Seal of a zero Verdict = %v, want PLAN_MISMATCH %q", err, egress.ReasonSchema)
	}
}

// TestSealForgedPassDoesNotCompile: a hand-built "pass" CutVerification@1
// does not type-check as a seal request's verification.
func TestSealForgedPassDoesNotCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program (-short)")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	const src = `package forge

import (
	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/receipts"
)

var _ = egress.SealRequest{Verification: receipts.Verification{Verdict: receipts.VerdictPass}}
`
	// Inside the module (under testdata, which ./... skips), so that it
	// sees the packages as any caller does.
	pkg := filepath.Join("testdata", "forge-"+strings.ReplaceAll(time.Now().Format("150405.000000000"), ".", ""))
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(pkg)
	if err := os.WriteFile(filepath.Join(pkg, "forge.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gobin, "build", "./"+pkg).CombinedOutput()
	if err == nil {
		t.Fatal("a hand-built pass verification compiles into a SealRequest")
	}
	if !strings.Contains(string(out), "cannot use") || !strings.Contains(string(out), "Verdict") {
		t.Fatalf("build failed for another reason:\n%s", out)
	}
}
