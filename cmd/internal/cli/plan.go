package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/wire"
)

func init() {
	registerGroup("plan", "write a DisclosurePlan@1")
	register(&command{name: "plan init", synopsis: "--vocab V (--route NOTE --trust KEYS… | --consumer KIND:ID --purpose P --target URL [--mode M] [--max-uses N] [--allow CATS] [--remote-deadline D] [--return-window D] [--station NAME] [--max-parents N] [--wire P --model M --instruction-file F [--max-output-tokens N]]) [--schema S] [--expires D] [-o F] PROJ",
		summary: "write the DisclosurePlan@1 of a projection", run: runPlanInit})
}

func runPlanInit(ctx context.Context, c *Cmd, args []string) error {
	fs := c.flags("plan init")
	vocabPath := fs.String("vocab", "", "vocabulary `file`")
	consumer := fs.String("consumer", "", "consumer `KIND:ID`")
	purpose := fs.String("purpose", "", "declared `purpose`")
	target := fs.String("target", "", "exact target `URL`")
	mode := fs.String("mode", receipts.ModeIrreversible, "irreversible or reversible")
	expires := durationVar(fs, "expires", 24*time.Hour, "plan lifetime, a `duration` such as 24h or 168h")
	out := fs.String("o", "", "write the plan to `file` (default stdout)")
	maxUses := fs.Int("max-uses", 1, "admissions allowed")
	maxParents := fs.Int("max-parents", grammar.DefaultMaxParents, "distinct parents allowed in the joined label")
	allow := fs.String("allow", "", "comma-separated owner categories to allow (default all but credential)")
	schemaPath := fs.String("schema", "", "output schema `file` (reversible cuts)")
	remote := durationVar(fs, "remote-deadline", 10*time.Minute, "reversible: how long the remote model may take (a `duration`)")
	window := durationVar(fs, "return-window", time.Hour, "reversible: how long a return may wait for rehydration (a `duration`)")
	station := fs.String("station", "local", "reversible: the station allowed to rehydrate")
	keyPath := fs.String("evidence-key", "", "evidence key `file`")
	wireProfile := fs.String("wire", "", "wire `profile` the export is sent as: export@1 (default), openai-chat@1 or anthropic-messages@1")
	model := fs.String("model", "", "the provider's `model` (openai-chat@1, anthropic-messages@1)")
	instructionFile := fs.String("instruction-file", "", "`file` whose bytes are the instruction: public text, valid UTF-8 (the system message)")
	maxTokens := fs.Int("max-output-tokens", 4096, "the answer's token ceiling (openai-chat@1, anthropic-messages@1)")
	rf := addRouteFlags(fs)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if *rf.note != "" {
		return c.planFromRoute(fs, rf, *vocabPath, *schemaPath, *keyPath, *out, pos)
	}
	if *vocabPath == "" || *consumer == "" || *purpose == "" || *target == "" || len(pos) != 1 {
		return c.usage()
	}
	if *expires <= 0 || *maxUses < 1 || *maxParents < 1 {
		return usagef("--expires, --max-uses and --max-parents must be positive")
	}
	if !censor.ValidTarget(*target) {
		return usagef("--target must be an absolute http or https URL, without user info or fragment")
	}
	kind, id, ok := strings.Cut(*consumer, ":")
	if !ok || kind == "" || id == "" {
		return usagef("--consumer is KIND:ID")
	}
	if *mode != receipts.ModeIrreversible && *mode != receipts.ModeReversible {
		return usagef("--mode is irreversible or reversible")
	}
	opt := censor.PlanOptions{Consumer: receipts.Consumer{Kind: kind, ID: id}, Purpose: *purpose, Target: *target,
		Mode: *mode, Expires: *expires, Now: time.Now(), MaxUses: *maxUses, MaxParents: *maxParents,
		RemoteDeadline: *remote, ReturnWindow: *window, Station: *station}
	if opt.Wire, err = planWire(*wireProfile, *model, *instructionFile, *maxTokens); err != nil {
		return err
	}
	if *allow != "" {
		for _, name := range strings.Split(*allow, ",") {
			cat, ok := grammar.ParseCategory([]byte(strings.TrimSpace(name)))
			if !ok || cat == grammar.CategoryCredential {
				return usagef("--allow: %q is not an allowed category; the categories are %s (credential is never allowed)",
					name, allowedCategories())
			}
			opt.Allowed = append(opt.Allowed, cat)
		}
	}
	var schema []byte
	if *schemaPath != "" {
		if schema, err = readFileCapped(*schemaPath, pipeline.MaxSchemaBytes); err != nil {
			return fmt.Errorf("read schema: %w", err)
		}
	}
	vb, err := readVocabularyFile(*vocabPath)
	if err != nil {
		return err
	}
	vocab, err := pipeline.LoadVocabulary(vb)
	if err != nil {
		return vocabularyError(vb, err)
	}
	data, refs, err := readProjection(c, pos[0])
	if err != nil {
		return err
	}
	key, err := c.evidenceKey(*keyPath)
	if err != nil {
		return err
	}
	pl, err := c.newPipeline(key, pipeline.InProcess(), nil)
	if err != nil {
		return err
	}
	if refs != nil {
		return c.pipelineError(false, pl.Refuse(refs))
	}
	plan, err := pl.MakePlan(vocab, data, opt, schema)
	if err != nil {
		return c.pipelineError(false, err)
	}
	c.sayStrictness(plan, schema)
	return c.writePlan(plan, *out)
}

// planShaping are the flags of plan init that a route fixes.
var planShaping = []string{"consumer", "purpose", "target", "mode", "max-uses", "max-parents", "allow",
	"remote-deadline", "return-window", "station", "wire", "model", "instruction-file", "max-output-tokens"}

// planFromRoute is plan init --route: the plan of the projection made from
// an approved route, with --expires as its lifetime (default: the route's
// max_lifetime_s).
func (c *Cmd) planFromRoute(fs *flag.FlagSet, rf routeFlags, vocabPath, schemaPath, keyPath, out string, pos []string) error {
	var lifetime time.Duration
	var fixed []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(planShaping, f.Name) {
			fixed = append(fixed, "--"+f.Name)
		}
		if f.Name == "expires" {
			lifetime = f.Value.(flag.Getter).Get().(time.Duration)
		}
	})
	if len(fixed) > 0 {
		return usagef("the route fixes %s: give only --vocab, --schema, --expires and -o with --route", strings.Join(fixed, ", "))
	}
	if vocabPath == "" || len(pos) != 1 {
		return c.usage()
	}
	if lifetime < 0 {
		return usagef("--expires must be positive")
	}
	a, err := rf.open(c, false)
	if err != nil {
		return err
	}
	var schema []byte
	if schemaPath != "" {
		if schema, err = readFileCapped(schemaPath, pipeline.MaxSchemaBytes); err != nil {
			return fmt.Errorf("read schema: %w", err)
		}
	}
	vb, err := readVocabularyFile(vocabPath)
	if err != nil {
		return err
	}
	vocab, err := pipeline.LoadVocabulary(vb)
	if err != nil {
		return vocabularyError(vb, err)
	}
	data, refs, err := readProjection(c, pos[0])
	if err != nil {
		return err
	}
	key, err := c.evidenceKey(keyPath)
	if err != nil {
		return err
	}
	pl, err := c.newPipeline(key, pipeline.InProcess(), nil)
	if err != nil {
		return err
	}
	if refs != nil {
		return c.pipelineError(false, pl.Refuse(refs))
	}
	plan, err := pl.MakeRoutePlan(vocab, data, a, lifetime, schema)
	if err != nil {
		return c.pipelineError(false, err)
	}
	return c.writePlan(plan, out)
}

// writePlan writes a plan document to file out (0600), or to stdout.
func (c *Cmd) writePlan(plan *pipeline.Plan, out string) error {
	b := append(bytes.Clone(plan.Document()), '\n')
	if out == "" {
		_, err := c.Stdout.Write(b)
		return err
	}
	return os.WriteFile(out, b, 0o600)
}

// planWire is the wire of plan init's flags: nil for export@1 (or none).
func planWire(profile, model, instructionFile string, maxTokens int) (*receipts.Wire, error) {
	switch profile {
	case "", receipts.WireExport:
		if model != "" || instructionFile != "" {
			return nil, usagef("--model and --instruction-file are for --wire openai-chat@1 or anthropic-messages@1")
		}
		if profile == "" {
			return nil, nil
		}
		return &receipts.Wire{Profile: receipts.WireExport}, nil
	case receipts.WireOpenAIChat, receipts.WireAnthropicMessages:
	default:
		return nil, usagef("--wire is one of export@1, openai-chat@1, anthropic-messages@1")
	}
	if model == "" || instructionFile == "" {
		return nil, usagef("--wire %s needs --model and --instruction-file", profile)
	}
	if maxTokens < 1 {
		return nil, usagef("--max-output-tokens must be positive")
	}
	text, err := readFileCapped(instructionFile, 64<<10)
	if err != nil {
		return nil, fmt.Errorf("read instruction: %w", err)
	}
	if !utf8.Valid(text) {
		return nil, usagef("--instruction-file is not valid UTF-8 (the instruction is public text, sent as it is)")
	}
	return &receipts.Wire{Profile: profile, Model: model, Instruction: string(text), MaxOutputTokens: maxTokens}, nil
}

// sayStrictness tells, for a plan of a provider profile, whether its
// output schema is sent as strict, and if not why: a schema a provider
// would reject in strict mode is never sent as strict.
func (c *Cmd) sayStrictness(plan *pipeline.Plan, schema []byte) {
	f := plan.Fields()
	if f.WireProfile() == receipts.WireExport || schema == nil {
		return
	}
	s, err := wire.ParseSchema(schema)
	if err != nil {
		return
	}
	st := s.Strictness()
	if st.Strict {
		c.hintf("the output schema meets the providers' strict rules: it is sent with strict true")
		return
	}
	c.hintf("the output schema is sent with strict false: %s", st)
}

// allowedCategories lists the owner categories --allow takes, comma-separated.
func allowedCategories() string {
	var names []string
	for _, cat := range grammar.Categories() {
		if cat != grammar.CategoryCredential {
			names = append(names, cat.String())
		}
	}
	return strings.Join(names, ",")
}

// durationFlag is a duration flag whose parse error says which form a
// duration takes.
type durationFlag struct{ d *time.Duration }

// durationForm is the accepted form of a duration, for messages.
const durationForm = "a duration is a number with a unit (ns, us, ms, s, m, h), such as 90s, 10m, 24h or 1h30m; a day is 24h, a week 168h"

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

// Get returns the time.Duration (flag.Getter).
func (f durationFlag) Get() any { return *f.d }

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New(durationForm)
	}
	*f.d = d
	return nil
}

// durationVar defines a duration flag with durationFlag's error.
func durationVar(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	d := new(time.Duration)
	*d = value
	fs.Var(durationFlag{d}, name, usage)
	return d
}
