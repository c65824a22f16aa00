package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
	"github.com/privacycut/privacycut/verifier/plugin"
)

// pluginArg is the hidden first argument with which cut re-executes itself
// as the verifier plugin.
const pluginArg = plugin.Arg

// evidenceKeyPath is --evidence-key, else $PRIVACYCUT_EVIDENCE_KEY, else
// $XDG_DATA_HOME/privacycut/evidence.key, else
// ~/.local/share/privacycut/evidence.key (receipts.DefaultEvidenceKeyPath,
// read through the command's environment).
func (c *Cmd) evidenceKeyPath(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if p := c.Getenv("PRIVACYCUT_EVIDENCE_KEY"); p != "" {
		return p, nil
	}
	if x := c.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "privacycut", "evidence.key"), nil
	}
	if h := c.Getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "privacycut", "evidence.key"), nil
	}
	return receipts.DefaultEvidenceKeyPath()
}

func (c *Cmd) evidenceKey(flagValue string) (*receipts.EvidenceKey, error) {
	p, err := c.evidenceKeyPath(flagValue)
	if err != nil {
		return nil, err
	}
	k, err := receipts.LoadOrCreateEvidenceKey(p)
	if err != nil {
		return nil, err
	}
	// The key is wiped when Run returns, after the plugin has stopped.
	c.frees = append(c.frees, k.Wipe)
	return k, nil
}

// loadPlan strictly decodes a DisclosurePlan@1 file.
func loadPlan(path string) (*receipts.Plan, []byte, error) {
	data, err := readFileCapped(path, 1<<20)
	if err != nil {
		return nil, nil, fmt.Errorf("read plan: %w", err)
	}
	var p receipts.Plan
	if err := canon.Unmarshal(data, &p, canon.Options{MaxBytes: 1 << 20}); err != nil {
		return nil, nil, fmt.Errorf("plan: %w", err)
	}
	if err := planCanonical(data, &p); err != nil {
		return nil, nil, err
	}
	return &p, data, nil
}

// planCanonical checks that a plan document is its fields' canonical form,
// up to white space and member order: the censor and the seal digest the
// plan's fields, the verifier the document, and the two must be one digest.
// An explicit empty or null member ("station":"", "remote_deadline_s":0)
// decodes to the same fields but is another document.
func planCanonical(data []byte, p *receipts.Plan) error {
	doc, err := canon.Canonicalize(data)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	fields, err := canon.Marshal(p)
	if err != nil {
		return err
	}
	if !bytes.Equal(doc, fields) {
		return errors.New("plan: holds a member its fields leave out (an explicit empty, zero or null value); remove it")
	}
	return nil
}

func readFileCapped(path string, max int64) ([]byte, error) {
	data, over, err := readCapped(nil, path, max)
	if err != nil {
		return nil, err
	}
	if over {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return data, nil
}

// inputs are the files a cut is made from.
type inputs struct {
	vocab      *grammar.Vocabulary
	vocabBytes []byte
	plan       *receipts.Plan
	planBytes  []byte
	source     []byte
	doc        *grammar.Document
	key        *receipts.EvidenceKey
}

// load reads vocabulary, plan, evidence key and projection; a projection
// refused at load is returned as refusals, not an error.
func (c *Cmd) load(vocabPath, planPath, keyPath, projPath string) (*inputs, []grammar.Refusal, error) {
	in := &inputs{}
	var err error
	if in.vocabBytes, err = readFileCapped(vocabPath, grammar.MaxVocabularyBytes); err != nil {
		return nil, nil, fmt.Errorf("read vocabulary: %w", err)
	}
	if in.vocab, err = grammar.LoadVocabulary(in.vocabBytes); err != nil {
		return nil, nil, err
	}
	if planPath != "" {
		if in.plan, in.planBytes, err = loadPlan(planPath); err != nil {
			return nil, nil, err
		}
	}
	if in.key, err = c.evidenceKey(keyPath); err != nil {
		return nil, nil, err
	}
	data, refs, err := readProjection(c, projPath)
	if err != nil || refs != nil {
		return nil, refs, err
	}
	in.source = data
	// The decoded texts live in a buffer of the command, as the file does.
	if in.doc, refs = grammar.LoadProjection(data, grammar.LoadOptions{Buffer: c.buffer}); refs != nil {
		return nil, refs, nil
	}
	return in, nil, nil
}

// refusedCut prints a censor refusal and returns the exit-3 error.
func (c *Cmd) refusedCut(asJSON bool, err error) error {
	var re *censor.RefusedError
	if !errors.As(err, &re) {
		return c.vaultError(asJSON, err) // a refusal of the vault's, or an operational error
	}
	if re.Field != "" {
		c.errorf("%s: plan field %s does not hold", c.name, re.Field)
	}
	return c.refuse(asJSON, re.Refusals, nil)
}

// verify runs the independent verifier on req: by default in its own
// process (cut re-executed as a go-plugin, the inputs handed over in a sealed
// memfd), or in this process with --verifier inprocess (tests, benchmarks).
func (c *Cmd) verify(ctx context.Context, mode string, req verifier.Request) (receipts.Verification, error) {
	p, err := c.launchVerifier(ctx, mode)
	if err != nil {
		return receipts.Verification{}, err
	}
	if p != nil {
		defer p.Close()
	}
	return c.runVerifier(ctx, p, req)
}

// pluginVerifier is a launched verifier plugin. Its Close tells the logger
// first: go-plugin reports a plugin stopped by force (a start cut short by a
// refusal, say) as a failure, which here is only the command ending.
type pluginVerifier struct {
	*plugin.Pending
	stopping *atomic.Bool
}

// Close stops the plugin, quietly.
func (v *pluginVerifier) Close() error {
	v.stopping.Store(true)
	return v.Pending.Close()
}

// launchVerifier starts the verifier plugin for mode "plugin" (the
// default), this executable re-executed, to be given its request by
// runVerifier; it returns nil for "inprocess". The caller closes it.
func (c *Cmd) launchVerifier(ctx context.Context, mode string) (*pluginVerifier, error) {
	switch mode {
	case "inprocess":
		// Nothing in the verification records the mode: say it where the
		// user sees it.
		c.hintf("the verifier runs inside this process (--verifier inprocess): its verdict is not independent of cut's; the default runs it as a plugin process")
		return nil, nil
	case "plugin", "":
	default:
		return nil, usagef("--verifier is plugin or inprocess")
	}
	exe, err := selfExecutable()
	if err != nil {
		return nil, err
	}
	stopping := new(atomic.Bool)
	logger := hclog.New(&hclog.LoggerOptions{Name: "verifier", Output: c.Stderr, Level: hclog.Warn,
		Exclude: func(hclog.Level, string, ...any) bool { return stopping.Load() }})
	p, err := plugin.Launch(ctx, exe, []string{pluginArg}, nil, logger)
	if err != nil {
		return nil, fmt.Errorf("verifier plugin: %w", err)
	}
	return &pluginVerifier{Pending: p, stopping: stopping}, nil
}

// verifyBudget is how long a plugin may take to answer a request of n
// input bytes: 2 minutes and 2 seconds per MiB, some hundred times what a
// verification takes on a 2-CPU machine (about 1.5 s for 130 MB). A plugin
// that never answers (stopped, wedged) then fails the command instead of
// hanging it.
var verifyBudget = func(n int) time.Duration { return 2*time.Minute + time.Duration(n>>20)*2*time.Second }

// runVerifier verifies req in the plugin p, or in this process if p is nil.
func (c *Cmd) runVerifier(ctx context.Context, p *pluginVerifier, req verifier.Request) (receipts.Verification, error) {
	if p == nil {
		return verifier.Verify(req), nil
	}
	n := len(req.Source) + len(req.Export) + len(req.Plan) + len(req.Vocabulary) + len(req.Receipts)
	ctx, cancel := context.WithTimeout(ctx, verifyBudget(n))
	defer cancel()
	v, err := p.Verify(ctx, req)
	if err != nil {
		return receipts.Verification{}, fmt.Errorf("verifier plugin: %w", err)
	}
	return v, nil
}
