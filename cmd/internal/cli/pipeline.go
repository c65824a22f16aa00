package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
)

// verifyBudget bounds the verifier plugin's answer (a variable for the
// test that makes it too short).
var verifyBudget = pipeline.DefaultVerifyBudget

// pipelineFor returns the pipeline of one command: its evidence key, its
// verifier (mode "plugin", the default, or "inprocess"), its vault (nil
// for none), its journal and its buffers. The plugin's log goes to stderr.
func (c *Cmd) pipelineFor(key *receipts.EvidenceKey, verifierMode string, vault *client.Client) (*pipeline.Pipeline, error) {
	var v pipeline.Verifier
	switch verifierMode {
	case "inprocess":
		// Nothing in the verification records the mode: say it where the
		// user sees it.
		c.hintf("the verifier runs inside this process (--verifier inprocess): its verdict is not independent of cut's; the default runs it as a plugin process")
		v = pipeline.InProcess()
	case "plugin", "":
		exe, err := selfExecutable()
		if err != nil {
			return nil, err
		}
		v = pipeline.Plugin(exe, []string{pipeline.PluginArg}, c.Stderr)
	default:
		return nil, usagef("--verifier is plugin or inprocess")
	}
	return c.newPipeline(key, v, vault)
}

// newPipeline returns a pipeline of the command with verifier v.
func (c *Cmd) newPipeline(key *receipts.EvidenceKey, v pipeline.Verifier, vault *client.Client) (*pipeline.Pipeline, error) {
	p, err := pipeline.New(pipeline.Options{
		EvidenceKey: key, Verifier: v, Vault: vault, VaultSocket: c.sock, Journal: c.openJournal(), Buffer: c.buffer,
		Command: c.canonical(), VerifyBudget: verifyBudget,
		Warn: func(msg string) { c.errorf("%s: %s", c.name, msg) },
	})
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, func() { p.Close() })
	return p, nil
}

// pipelineError prints what a pipeline error needs printed and returns the
// error that decides the exit code: a refusal prints its document (exit
// 3), a failed verification its verdict (exit 4).
func (c *Cmd) pipelineError(asJSON bool, err error) error {
	var re *pipeline.RefusedError
	if errors.As(err, &re) {
		switch {
		case re.Field != "" && re.Detail != "":
			c.errorf("%s: plan field %s does not hold: %s", c.name, re.Field, re.Detail)
		case re.Field != "":
			c.errorf("%s: plan field %s does not hold", c.name, re.Field)
		case re.Detail != "":
			c.errorf("%s: %s", c.name, re.Detail)
		}
		if re.Err != nil && len(re.Document.Reasons) > 0 && re.Document.Reasons[0].Kind == "vault" {
			c.errorf("%s: %v", c.name, re.Err)
			storageHint(c, re.Err)
		}
		return c.printRefusal(asJSON, re.Document)
	}
	if errors.Is(err, pipeline.ErrPlanOptions) {
		return &usageError{err.Error()}
	}
	return err
}

// printRefusal prints a refusal document (JSON, or one line per reason)
// and returns the error that makes cut exit 3.
func (c *Cmd) printRefusal(asJSON bool, doc receipts.RefusalDocument) error {
	n := len(doc.Reasons)
	if asJSON {
		if err := c.printJSON(doc); err != nil {
			return err
		}
		return &refusedError{n}
	}
	noun := "reasons"
	if n == 1 {
		noun = "reason"
	}
	fmt.Fprintf(c.Stdout, "refused: %d %s (event %s)\n", n, noun, doc.EventID)
	for _, r := range doc.Reasons {
		fmt.Fprintln(c.Stdout, refusalLine(r))
	}
	return &refusedError{n}
}

// refusalLine is one reason of a refusal, as printed.
func refusalLine(r receipts.Refusal) string {
	if r.Kind == "return" && r.Part < 0 {
		where := "return"
		if r.Path != "" {
			where = fmt.Sprintf("return %s line %d col %d len %d", r.Path, r.Line, r.Column, r.Length)
		}
		return where + ": " + string(r.Code)
	}
	return r.Where() + ": " + string(r.Code)
}

// loadInputs reads the vocabulary and the plan files of a cut.
func (c *Cmd) loadInputs(vocabPath, planPath string) (*pipeline.Vocabulary, *pipeline.Plan, error) {
	vb, err := readVocabularyFile(vocabPath)
	if err != nil {
		return nil, nil, err
	}
	vocab, err := pipeline.LoadVocabulary(vb)
	if err != nil {
		return nil, nil, vocabularyError(vb, err)
	}
	plan, err := loadPlan(planPath)
	if err != nil {
		return nil, nil, err
	}
	return vocab, plan, nil
}

// loadPlan reads and strictly decodes a DisclosurePlan@1 file.
func loadPlan(path string) (*pipeline.Plan, error) {
	data, err := readFileCapped(path, pipeline.MaxPlanBytes)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	return pipeline.ParsePlan(data)
}

// untilText says how long from now t is, for a person.
func untilText(t time.Time) string {
	d := time.Until(t).Round(time.Second)
	if d < 0 {
		return "already past"
	}
	return "in " + d.String()
}
