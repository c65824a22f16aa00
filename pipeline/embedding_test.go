package pipeline_test

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/privacycut/privacycut/internal/standin"
)

// TestEmbeddingProgram builds examples/embedding, a program with its own
// go.mod (a replace directive points at this module), and runs it against a
// loopback model: it prepares and sends an irreversible cut verified by
// itself re-executed as the plugin, and a reversible cut rehydrated in a
// vault it embeds.
func TestEmbeddingProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program (-short)")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	src, err := filepath.Abs("../examples/embedding")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "embedding")
	build := exec.Command(gobin, "build", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build examples/embedding: %v\n%s", err, out)
	}
	model := httptest.NewServer(standin.Handler())
	defer model.Close()
	ex, _ := filepath.Abs("../examples")
	cmd := exec.Command(bin, "-vocab", filepath.Join(ex, "vocabulary.json"), "-projection", filepath.Join(ex, "projection.json"),
		"-schema", filepath.Join(ex, "schema.json"), "-model", model.URL)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("embedding: %v\n%s\n%s", err, out, stderr)
	}
	want := regexp.MustCompile(`^irreversible: pass by verifier/1, sent \d+ bytes, HTTP 200, sealed bytes: true
reversible: pass, lease CONSUMED, substituted map\[module:\d+ team:\d+\], owner values back: true
$`)
	if !want.Match(out) {
		t.Fatalf("output:\n%s", out)
	}
}
