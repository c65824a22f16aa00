package pipeline

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/internal/gen"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/server"
	"github.com/privacycut/privacycut/vault/service"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// BenchmarkReversibleCut4MiB10k: a reversible cut of a
// 4 MiB projection with 10,000 distinct owner values — the censor, the values
// sealed to a vault over its unix socket, the lease granted and written
// durably, the tokens put in place — without the verifier (reported apart).
func BenchmarkReversibleCut4MiB10k(b *testing.B) {
	if err := harden.Apply(); err != nil { // the vault's profile needs an undumpable process
		b.Skip(err)
	}
	dir := b.TempDir()
	v, err := service.Open(service.Options{StateDir: filepath.Join(dir, "state"), KeyDir: filepath.Join(dir, "keys"),
		MaxLease: 2 * time.Hour, ArenaSize: 8 << 20, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	if p := v.Prove(); !p.Accepted() {
		b.Skipf("vault profile not accepted here: %v", p.Reasons)
	}
	srv := server.New(v, server.Options{})
	sock := filepath.Join(dir, "run", "vault.sock")
	ln, err := server.Listen(sock)
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Stop()
	cl, err := client.Dial(sock)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()

	gv := gen.NewVocab()
	vocab, err := grammar.LoadVocabulary(gv.JSON())
	if err != nil {
		b.Fatal(err)
	}
	doc := gen.Projection(gv.Records(gen.Options{Seed: 3, Size: 4 << 20, Parts: 1, Distinct: 1500}))
	d, refs := grammar.LoadProjection(doc, grammar.LoadOptions{})
	if refs != nil {
		b.Fatal(refs)
	}
	key, _ := receipts.NewEvidenceKey(make([]byte, 32))
	plan, err := censor.NewPlan(d, vocab, key, censor.PlanOptions{Consumer: receipts.Consumer{Kind: "m", ID: "m"}, Purpose: "p",
		Target: "https://m.example/", Now: time.Now(), Mode: receipts.ModeReversible,
		OutputSchemaDigest: receipts.SHA256([]byte(`{}`))})
	if err != nil {
		b.Fatal(err)
	}
	pl, err := New(Options{EvidenceKey: key, Vault: cl})
	if err != nil {
		b.Fatal(err)
	}
	run := func() *censor.Output {
		src := &vaultSource{p: pl, req: vaultapi.CreateRequest{Run: "bench", Attempt: 1, Target: plan.Target, Purpose: plan.Purpose,
			RemoteDeadlineS: uint64(plan.RemoteDeadlineS), ReturnWindowS: uint64(plan.ReturnWindowS),
			Lifetime: time.Duration(plan.RemoteDeadlineS+plan.ReturnWindowS) * time.Second}}
		out, err := censor.Cut(context.Background(), censor.Input{Doc: d, Vocabulary: vocab, Plan: plan, Key: key, Tokens: src})
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	out := run()
	if out.Pairs < 10000 {
		b.Fatalf("only %d distinct values", out.Pairs)
	}
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	for b.Loop() {
		run()
	}
	b.ReportMetric(float64(out.Pairs), "values")
}
