package egress_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
)

// An agent runtime seals the verified cut once, then asks the gate right
// before each HTTP call, and sends only the bytes it admitted.
func Example() {
	// The remote model; here a local test server that reports what it got.
	var received []byte
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received, _ = io.ReadAll(r.Body)
	}))
	defer model.Close()

	dir, _ := os.MkdirTemp("", "egress-example")
	defer os.RemoveAll(dir)
	gate := egress.NewAuthority(egress.Options{
		Journal:        egress.OpenJournal(filepath.Join(dir, "journal.jsonl")),
		PolicyRevision: "privacycut-policy/1",
	})

	// What the censor and the out-of-process verifier produced.
	req, err := preparedCut(model.URL + "/v1/triage")
	if err != nil {
		fmt.Println("prepare:", err)
		return
	}
	cut, err := gate.Seal(req)
	if err != nil {
		fmt.Println("seal:", err)
		return
	}

	send := func(body []byte) {
		d, err := gate.Admit(cut.EventID, body, cut.Target, cut.Consumer)
		var refused *egress.Error
		if errors.As(err, &refused) {
			fmt.Println("refused:", refused.Code, refused.Reason)
			return
		}
		if err != nil {
			fmt.Println("egress:", err)
			return
		}
		// Build the request from the admitted bytes and target only.
		hr, err := http.NewRequest(http.MethodPost, d.Target, bytes.NewReader(body))
		if err != nil {
			fmt.Println(err)
			return
		}
		hr.Header.Set("Content-Type", "application/json")
		resp, err := model.Client().Do(hr)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Printf("admit=%v use=%d/%d sent=%v\n", d.Admit, d.Use, d.MaxUses,
			receipts.SHA256(received) == cut.ExportDigest)
	}

	send(req.Export)
	tampered := bytes.Replace(req.Export, []byte("redacted:module:1"), []byte("git.corp.example/ledger"), 1)
	send(tampered)

	// Output:
	// admit=true use=1/2 sent=true
	// refused: PLAN_MISMATCH body
}

// preparedCut is what `cut prepare` does before the seal: the censor cuts
// the bundled example under a plan for target, and the verifier checks it.
func preparedCut(target string) (egress.SealRequest, error) {
	key, err := receipts.NewEvidenceKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		return egress.SealRequest{}, err
	}
	vocab, err := grammar.LoadVocabulary(examples.Vocabulary)
	if err != nil {
		return egress.SealRequest{}, err
	}
	doc, refs := grammar.LoadProjection(examples.Projection, grammar.LoadOptions{})
	if refs != nil {
		return egress.SealRequest{}, &refs[0]
	}
	plan, err := censor.NewPlan(doc, vocab, key, censor.PlanOptions{
		Consumer: receipts.Consumer{Kind: "model", ID: "triage"}, Purpose: "dependency-triage",
		Target: target, MaxUses: 2, Now: time.Now(),
	})
	if err != nil {
		return egress.SealRequest{}, err
	}
	out, err := censor.Cut(context.Background(), censor.Input{Doc: doc, Vocabulary: vocab, Plan: plan, Key: key})
	if err != nil {
		return egress.SealRequest{}, err
	}
	planDoc, err := canon.Marshal(plan)
	if err != nil {
		return egress.SealRequest{}, err
	}
	rs, err := canon.Marshal(out.Receipts)
	if err != nil {
		return egress.SealRequest{}, err
	}
	verdict := verifier.Check(verifier.Request{Source: examples.Projection, Export: out.Export, ExportDigest: out.ExportDigest,
		Plan: planDoc, Vocabulary: examples.Vocabulary, Receipts: rs, EvidenceKey: key, Now: time.Now()})
	return egress.SealRequest{SourceDigest: out.SourceDigest, Export: out.Export, Plan: *plan,
		Receipts: out.Receipts, Verification: verdict}, nil
}
