// Command embedding is a program outside privacycut's module that uses the
// pipeline as a library: it cuts the bundled example projection
// irreversibly, with the verifier in its own process (this program
// re-executed), and reversibly, with a vault embedded in this process, and
// sends each cut to the model at the URL it is given.
//
//	embedding -vocab V -projection P -schema S -model URL
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"os"

	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/embedded"
)

func main() {
	// First thing: when re-executed as the verifier plugin, serve and exit.
	pipeline.ServePluginIfRequested()

	vocabPath := flag.String("vocab", "", "Vocabulary@1 file")
	projPath := flag.String("projection", "", "Projection@1 file")
	schemaPath := flag.String("schema", "", "output schema file")
	model := flag.String("model", "", "base URL of the model")
	flag.Parse()
	if err := run(*vocabPath, *projPath, *schemaPath, *model); err != nil {
		fmt.Fprintln(os.Stderr, "embedding:", err)
		os.Exit(1)
	}
}

func run(vocabPath, projPath, schemaPath, model string) error {
	ctx := context.Background()
	vocabDoc, err := os.ReadFile(vocabPath)
	if err != nil {
		return err
	}
	proj, err := os.ReadFile(projPath)
	if err != nil {
		return err
	}
	schema, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	vocab, err := pipeline.LoadVocabulary(vocabDoc)
	if err != nil {
		return err
	}
	k := make([]byte, 32)
	rand.Read(k)
	key, err := receipts.NewEvidenceKey(k)
	if err != nil {
		return err
	}
	defer key.Wipe()
	consumer := receipts.Consumer{Kind: "model", ID: "triage"}

	// An irreversible cut, verified by this program re-executed as the
	// verifier plugin.
	p, err := pipeline.New(pipeline.Options{EvidenceKey: key, Verifier: pipeline.SelfPlugin(os.Stderr)})
	if err != nil {
		return err
	}
	defer p.Close()
	plan, err := p.MakePlan(vocab, proj, pipeline.PlanOptions{Consumer: consumer, Purpose: "dependency-triage",
		Target: model + "/v1/honest"}, nil)
	if err != nil {
		return err
	}
	cut, err := p.Prepare(ctx, pipeline.Input{Vocabulary: vocab, Plan: plan, Projection: proj})
	if err != nil {
		return err
	}
	sent, err := p.Send(ctx, cut, pipeline.SendOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("irreversible: %s by %s, sent %d bytes, HTTP %d, sealed bytes: %v\n", cut.Verification.Verdict,
		cut.Verification.Verifier, sent.Bytes, sent.Status, sent.BodyDigest == cut.ExportDigest)

	// A reversible cut, its tokens issued by a vault embedded here.
	dir, err := os.MkdirTemp("", "embedding-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	v, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		return err
	}
	defer v.Close()
	vc, err := client.Dial(v.Socket())
	if err != nil {
		return err
	}
	defer vc.Close()
	rp, err := pipeline.New(pipeline.Options{EvidenceKey: key, Verifier: pipeline.SelfPlugin(os.Stderr), Vault: vc})
	if err != nil {
		return err
	}
	defer rp.Close()
	rplan, err := rp.MakePlan(vocab, proj, pipeline.PlanOptions{Consumer: consumer, Purpose: "dependency-triage",
		Target: model + "/v1/honest", Mode: receipts.ModeReversible}, schema)
	if err != nil {
		return err
	}
	rcut, err := rp.Prepare(ctx, pipeline.Input{Vocabulary: vocab, Plan: rplan, Projection: proj, Schema: schema})
	if err != nil {
		return err
	}
	rsent, err := rp.Send(ctx, rcut, pipeline.SendOptions{Rehydrate: true})
	if err != nil {
		return err
	}
	fmt.Printf("reversible: %s, lease %s, substituted %v, owner values back: %v\n", rcut.Verification.Verdict,
		rsent.LeaseState, rsent.Rehydrated.Receipt.Substitutions,
		bytes.Contains(rsent.Rehydrated.Result, []byte("git.corp.example")))
	return nil
}
