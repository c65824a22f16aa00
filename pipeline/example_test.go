package pipeline_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/embedded"
)

// An irreversible cut of the bundled example: owner values become
// redacted:<category>:<n>, the independent verifier re-derives the cut, the
// seal authority seals it, and Send posts exactly the sealed bytes.
func Example_irreversible() {
	model := httptest.NewServer(standin.Handler()) // a stand-in for the remote model
	defer model.Close()
	key, _ := receipts.NewEvidenceKey(randomKey())
	defer key.Wipe()

	p, _ := pipeline.New(pipeline.Options{EvidenceKey: key, Verifier: pipeline.InProcess()})
	defer p.Close()
	vocab, _ := pipeline.LoadVocabulary(examples.Vocabulary)
	plan, err := p.MakePlan(vocab, examples.Projection, pipeline.PlanOptions{
		Consumer: receipts.Consumer{Kind: "model", ID: "triage"}, Purpose: "dependency-triage",
		Target: model.URL + "/v1/" + standin.Honest,
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	cut, err := p.Prepare(context.Background(), pipeline.Input{Vocabulary: vocab, Plan: plan, Projection: examples.Projection})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("verdict:", cut.Verification.Verdict, "sealed:", cut.Sealed())
	fmt.Println("owner value in the export:", bytes.Contains(cut.Export, []byte("git.corp.example")))
	sent, err := p.Send(context.Background(), cut, pipeline.SendOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	d := sent.Decisions[0]
	fmt.Printf("admitted: use %d of %d; HTTP %d; sent the sealed bytes: %v\n",
		d.Use, d.MaxUses, sent.Status, sent.BodyDigest == cut.ExportDigest)
	// Output:
	// verdict: pass sealed: true
	// owner value in the export: false
	// admitted: use 1 of 1; HTTP 200; sent the sealed bytes: true
}

// A reversible cut: the tokens are issued by a vault (here one embedded in
// this process), the answer is rehydrated inside it, only at the paths the
// output schema marks, and the lease is consumed.
func Example_reversible() {
	model := httptest.NewServer(standin.Handler())
	defer model.Close()
	dir, _ := os.MkdirTemp("", "pipeline-example-")
	defer os.RemoveAll(dir)
	v, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer v.Close()
	vc, err := client.Dial(v.Socket())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer vc.Close()
	key, _ := receipts.NewEvidenceKey(randomKey())
	defer key.Wipe()

	p, _ := pipeline.New(pipeline.Options{EvidenceKey: key, Verifier: pipeline.InProcess(), Vault: vc})
	defer p.Close()
	vocab, _ := pipeline.LoadVocabulary(examples.Vocabulary)
	plan, err := p.MakePlan(vocab, examples.Projection, pipeline.PlanOptions{
		Consumer: receipts.Consumer{Kind: "model", ID: "triage"}, Purpose: "dependency-triage",
		Target: model.URL + "/v1/" + standin.Honest, Mode: receipts.ModeReversible,
	}, examples.Schema)
	if err != nil {
		fmt.Println(err)
		return
	}
	cut, err := p.Prepare(context.Background(), pipeline.Input{Vocabulary: vocab, Plan: plan,
		Projection: examples.Projection, Schema: examples.Schema})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("verdict:", cut.Verification.Verdict, "lease:", strings.HasPrefix(cut.Lease, "pcl:"))
	sent, err := p.Send(context.Background(), cut, pipeline.SendOptions{Rehydrate: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := sent.Rehydrated
	fmt.Println("substituted:", r.Receipt.Substitutions, "lease now", sent.LeaseState)
	fmt.Println("owner value restored in the answer:", bytes.Contains(r.Result, []byte("git.corp.example")))
	// Output:
	// verdict: pass lease: true
	// substituted: map[module:4 team:1] lease now CONSUMED
	// owner value restored in the answer: true
}

func randomKey() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}
