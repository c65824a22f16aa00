package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/privacycut/privacycut/internal/gen"
)

var prepBench struct {
	once                   sync.Once
	dir, vocab, proj, plan string
	size                   int64
	err                    error
}

// setupPrepareBench writes a 64 MiB generated projection, its vocabulary and
// a plan into a temporary directory shared by the prepare benchmarks.
func setupPrepareBench(b *testing.B) {
	prepBench.once.Do(func() {
		dir, err := os.MkdirTemp("", "privacycut-bench-")
		if err != nil {
			prepBench.err = err
			return
		}
		prepBench.dir = dir
		gv := gen.NewVocab()
		prepBench.vocab = filepath.Join(dir, "vocab.json")
		prepBench.proj = filepath.Join(dir, "proj.json")
		prepBench.plan = filepath.Join(dir, "plan.json")
		doc := gen.Projection(gv.Records(gen.Options{Seed: 1, Size: 64 << 20}))
		prepBench.size = int64(len(doc))
		if err := os.WriteFile(prepBench.vocab, gv.JSON(), 0o600); err != nil {
			prepBench.err = err
			return
		}
		if err := os.WriteFile(prepBench.proj, doc, 0o600); err != nil {
			prepBench.err = err
			return
		}
		env := benchEnv(dir)
		if code := Run(context.Background(), []string{"plan", "init", "--vocab", prepBench.vocab, "--consumer", "model:m",
			"--purpose", "p", "--target", "https://m.example/", "-o", prepBench.plan, prepBench.proj}, env); code != 0 {
			prepBench.err = io.ErrUnexpectedEOF
		}
	})
	if prepBench.err != nil {
		b.Fatal(prepBench.err)
	}
}

func benchEnv(dir string) Env {
	return Env{Stdout: io.Discard, Stderr: os.Stderr, Getenv: func(k string) string {
		switch k {
		case "PRIVACYCUT_EVIDENCE_KEY":
			return filepath.Join(dir, "evidence.key")
		case "PRIVACYCUT_JOURNAL":
			return filepath.Join(dir, "journal.jsonl")
		}
		return ""
	}}
}

func benchPrepare(b *testing.B, mode string) {
	setupPrepareBench(b)
	env := benchEnv(prepBench.dir)
	// stderr (the in-process verifier's hint) is shown only on failure,
	// so that the benchmark's lines stay parseable.
	var stderr bytes.Buffer
	env.Stderr = &stderr
	b.SetBytes(prepBench.size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		stderr.Reset()
		if code := Run(context.Background(), []string{"prepare", "--vocab", prepBench.vocab, "--plan", prepBench.plan,
			"--verifier", mode, "--json", prepBench.proj}, env); code != 0 {
			b.Fatalf("prepare exit %d: %s", code, stderr.Bytes())
		}
	}
}

// BenchmarkPrepareInProcess is `cut prepare` of a 64 MiB projection with the
// verifier in process: read, decode, censor, export, receipts, verify, seal.
func BenchmarkPrepareInProcess(b *testing.B) { benchPrepare(b, "inprocess") }

// BenchmarkPreparePlugin is the same with the verifier out of process (go-plugin,
// mutual TLS over a local socket, the plugin binary checksummed at start).
func BenchmarkPreparePlugin(b *testing.B) { benchPrepare(b, "plugin") }

// BenchmarkPrepareSHA256Baseline hashes the same projection bytes in the same
// run.
func BenchmarkPrepareSHA256Baseline(b *testing.B) {
	setupPrepareBench(b)
	data, err := os.ReadFile(prepBench.proj)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sha256.Sum256(data)
	}
}

// freshProcess runs this test binary once per iteration as a new process,
// with asEnv set to as and its standard output to a file: what a user's
// shell does for each `cut prepare --json > bundle.json`.
// The process starts with an empty heap, so these include what the
// in-process benchmarks amortize: Go's start and the page faults of every
// buffer (see docs/PERFORMANCE.md).
func freshProcess(b *testing.B, as string, args ...string) {
	setupPrepareBench(b)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), asEnv+"="+as,
		"PRIVACYCUT_EVIDENCE_KEY="+filepath.Join(prepBench.dir, "evidence.key"),
		"PRIVACYCUT_JOURNAL="+filepath.Join(prepBench.dir, "journal.jsonl"))
	b.SetBytes(prepBench.size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := os.Create(filepath.Join(prepBench.dir, "stdout"))
		if err != nil {
			b.Fatal(err)
		}
		var errb bytes.Buffer
		cmd := exec.Command(exe, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, out, &errb
		err = cmd.Run()
		out.Close()
		if err != nil {
			b.Fatalf("%s %v: %v\n%s", as, args, err, errb.Bytes())
		}
	}
}

func freshPrepare(b *testing.B, mode string) {
	setupPrepareBench(b)
	freshProcess(b, "cut", "prepare", "--vocab", prepBench.vocab, "--plan", prepBench.plan, "--verifier", mode,
		"--json", prepBench.proj) // the bundle to a file, as `cut prepare --json … > bundle.json`
}

// BenchmarkPrepareFreshInProcess is `cut prepare` of the 64 MiB projection
// as a new process, verifier in process.
func BenchmarkPrepareFreshInProcess(b *testing.B) { freshPrepare(b, "inprocess") }

// BenchmarkPrepareFreshPlugin is the same with the verifier plugin (the
// default): two new processes.
func BenchmarkPrepareFreshPlugin(b *testing.B) { freshPrepare(b, "plugin") }

// BenchmarkPrepareFreshSHA256Baseline is a new process of the same binary
// that reads the projection and hashes it.
func BenchmarkPrepareFreshSHA256Baseline(b *testing.B) {
	setupPrepareBench(b)
	freshProcess(b, "sha256", prepBench.proj)
}
